package wake

import "strings"

// maxGlue is how many letters of the words around it whisper may have
// glued to the name in one written word and it still counts: whisper
// writes a word it does not know run into its neighbours ("Heagora
// Loister", "Batagora said", "agorade" for "Agora de", "anagora" for "aan
// Agora"; issue 21, Kokoro's speakers in the wake benchmark). Three letters
// keep out the longer words that hold the name's letters ("Protagoras",
// "mandragora"); the shorter ones are rejected words ("agoras",
// "Pythagoras", Config.Reject).
const maxGlue = 3

// glued reports whether k, the sound key of one written word, is want (a
// wake word's) with at most maxGlue letters before and after it, and not
// the start of a rejected word that begins with the name ("agorafo...").
func (r *Rules) glued(k, want string) bool {
	i := strings.Index(k, want)
	if i < 0 {
		return false
	}
	pre, post := k[:i], k[i+len(want):]
	if pre == "" && post == "" || len(pre) > maxGlue || len(post) > maxGlue {
		return false
	}
	return len(post) < 2 || !r.startsTail(post)
}

// startsTail reports whether s begins the rest of a rejected word that
// begins with the name ("fob" of "agorafobie").
func (r *Rules) startsTail(s string) bool {
	for _, t := range r.rejectTails {
		if strings.HasPrefix(t, s) {
			return true
		}
	}
	return false
}
