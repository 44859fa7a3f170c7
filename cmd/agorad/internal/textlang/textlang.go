package textlang

import (
	"strings"
	"unicode"
)

var nl = words(`de het een en van dat die niet ik je jij u op te met zijn voor er maar om aan ook als bij nog
	wel naar uit wat hoe waar wie deze dit wordt worden kan kunnen moet moeten heeft hebben geen al zo ze zij
	hij mij mijn jouw onze ons hun hier daar nu dan want omdat welke graag dank bedankt volgende`)

var en = words(`the a an and of to that this it not with for are be been have has had what how where who
	there on at by from or but you i my your our they them their he she his which will would can could
	should must please thanks thank next these those than then because`)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// Guess returns "nl" or "en" when text's function words say so, else "".
func Guess(text string) string {
	var n, e int
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		if nl[w] {
			n++
		}
		if en[w] {
			e++
		}
	}
	switch {
	case n > e:
		return "nl"
	case e > n:
		return "en"
	}
	return ""
}
