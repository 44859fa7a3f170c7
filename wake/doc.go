// Package wake finds wake phrases in transcripts: "agora" switches the
// device to feedback mode and the rest of the utterance is the request;
// "agora luister" / "agora listen" switches back to listening. Dutch and
// English.
//
// The input is whisper's text, not audio: the package decides what a
// written transcript means, and every wrong "yes" hands the inspector's
// listen buffer to the backend. Invariants:
//
//   - Matching is on whole words, ignoring case, accents and punctuation.
//     The text handed back (Before, Remainder, Phrase) is the transcript's
//     own, casing and punctuation kept; Phrase is a substring of it.
//   - A wake word is found where (a) the words are a configured entry as
//     written; or (b) one written word is within one edit of the sound key
//     of a one-word wake word of five or more letters ("Adora", "Agura",
//     "Nagora", "Agorav", "Gora"); or (c) two or three written words joined
//     spell that sound key exactly ("a gora", "Ah, gora"); or (d) one
//     written word holds that sound key with at most three letters before
//     and after it, not the start of a rejected word's rest ("Heagora",
//     "agorade": whisper runs a word it does not know into its
//     neighbours; "agorafob" is not one). The
//     sound key is the letters without doubled letters and without an 'h'
//     inside a word ("Aggora", "Agorra", "Agorah" are "agora"). Joined words
//     get no edit ("a gore a" is not "agora"), and configured entries of
//     several words or fewer than five letters match only as written: one
//     edit in a short word reaches too many real words.
//   - Config.Reject wins over all of that: a word or a run of up to three
//     words whose sound key is a rejected one ("angora", "Agra", "agora
//     fobie" written split), or within one edit of a rejected word at
//     least three letters longer than the name ("Gora phobia", "Agor
//     phobia": "agoraphobia"), is never part of a wake word. The default list
//     is every word of the English and Dutch dictionaries (Debian's
//     wamerican, wbritish, wdutch) that the fuzzy match would otherwise
//     take, plus "agora"'s plural, possessive and derived words; a test
//     keeps the shared clips' reference transcripts and real whisper output
//     on them free of matches. One exception: a rejected word no longer
//     than the name ("Agra", "ahora") right after a greeting in the same
//     sentence ("Hey Agra, listen.") is the name, as whisper spells it.
//     A rejected entry of several words that sounds as the name itself
//     ("ago ra", issue 21's near-miss) is rejected only written so, word
//     for word, and vetoes a spotted name where whisper wrote it there.
//   - Listen words must follow the wake word directly and match as written
//     (longest entry first: "luister maar" before "luister"). A listen word
//     elsewhere ("Agora, can you listen to this?") is part of the request.
//     Only the one word that ends the utterance may be a one-word listen
//     word misspelt by one letter ("lisen", "lissen", "Lister"), with the
//     same first letter and not a real word one letter away ("listed",
//     "lijsten", "lusten"). One or two last words that only sound like one
//     ("lesson", "Lee Sin"; phoneKey) are a question: "Agora, later?" and
//     "Agora, list them." sound as close. They switch back only when the
//     audio from them, heard again (TailFrom), has the listen word as
//     written or misspelt so.
//   - A greeting right before the wake word, in the same sentence (Dutch
//     and English: "Hello", "Hallo", "Hi", "Hoi", "Hai", "Hey", "Hé",
//     "Hee", "Okay", "Ok", "Oké", "Goedemorgen", "Goedemiddag",
//     "Goedenavond") belongs to the phrase: it is not handed over as a note.
//   - The first wake phrase in the text decides; later ones stay in the
//     remainder.
//   - MatchHeard is for an utterance in which the keyword spotter
//     (wake/kws) heard the name: whisper's own text decides when it has a
//     wake phrase; otherwise the words whisper wrote where the name was
//     said (by their times) are the name, and the rules above apply as if
//     it were written there. A word there, or starting up to 0.4 s after
//     it, that is within one edit the rest of a rejected word beginning
//     with the name ("phobia", "fobie") vetoes it: the spotter heard the
//     name's part of "agoraphobia".
//   - MatchSpot fuses the spotter's score with the text: a score at the
//     spotter's own threshold is the name (MatchHeard); a score in the
//     band from Config.Fuse up is the name only where the words whisper
//     wrote at the spotter's place sound like it (NameLike: a coarse
//     phonetic key of one to three words, within one or two edits of the
//     name's, at least Config.FuseLike) and the spotter's late head, which
//     hears the words after it, gives 0.95 or more (Spot.Late; not asked
//     when unknown); below the band, the text alone.
//     Rejected words at the place veto in either case. Fuse 0 is the
//     spotter alone.
//   - A name the spotter placed and MatchSpot took as a question becomes
//     the switch back when the audio after it, transcribed again on its
//     own (Spot.Tail; only for up to MaxTail of words, see TailFrom),
//     starts with listen words; the remainder is then the tail's own
//     text. Nothing else in the verdict reads the tail, except:
//   - An utterance whisper wrote nothing for (its guard dropped the text)
//     wakes only on a score at the spotter's own threshold; then the
//     whole audio after the name is the tail (TailFrom, any length), and
//     its text is the question, or the switch back when it starts with
//     listen words. A score in the band never wakes without text. When
//     that tail too comes back empty, it is heard once more from the
//     spotter's end (AgainFrom), within the same Budget; only then does
//     the name wake alone.
//
// Rules are immutable after New and safe for concurrent use.
//
// Files: config.go the wake words and their checks; wake.go the matcher
// (Rules.Match); tokens.go the words as the matcher sees them (folding,
// sound keys, edit distance); listenwords.go the switch back; glued.go,
// heard.go, tail.go and fuse.go what the spotter adds.
package wake
