package turnend

import "testing"

func TestComplete(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"Agora, is this railing high enough?", true},
		{" Check the weld at frame four.", true},
		{"Stop!", true},
		{"Is de balk nog goed?", true},
		{"Er zit roest op de onderste balk.", true},
		{"The crack runs from the.", false},
		{"The crack runs from the", false},
		{"and the beam is rusted and.", false},
		{"De scheur loopt van de.", false},
		{"Ik kijk naar het.", false},
		{"So the next thing is...", false},
		{"So the next thing is…", false},
		{"the railing is about one metre,", false},
		{"", false},
		{"   ", false},
		{"?", false},
		{`He said "stop."`, true},
	} {
		if got := Complete(c.text); got != c.want {
			t.Errorf("Complete(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestQuestionAndRule(t *testing.T) {
	for _, c := range []struct {
		text     string
		question bool
	}{
		{"Agora, is this railing high enough?", true},
		{"Is de balk nog goed? ", true},
		{"And so my fellow Americans.", false},
		{"Niet super.", false},
		{"is the crack wider than the?", false},
	} {
		if got := Question(c.text); got != c.question {
			t.Errorf("Question(%q) = %v, want %v", c.text, got, c.question)
		}
		if got := Rule("question")(c.text); got != c.question {
			t.Errorf("Rule(question)(%q) = %v, want %v", c.text, got, c.question)
		}
		if got, want := Rule("sentence")(c.text), Complete(c.text); got != want {
			t.Errorf("Rule(sentence)(%q) = %v, want Complete's %v", c.text, got, want)
		}
	}
	if Rule("maybe") != nil {
		t.Error("Rule(maybe) is not nil")
	}
}
