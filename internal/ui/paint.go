package ui

// Colour is one of the few colours astra paints a terminal with.
type Colour string

// The colours: the SGR parameters of their escape sequences.
const (
	Green  Colour = "32"
	Red    Colour = "31"
	Yellow Colour = "33"
	Cyan   Colour = "36"
	Dim    Colour = "2"
)

const reset = "\x1b[0m"

// Paint colours text. Only a Writer that allows colour lets it through;
// any other writer, and Clean, drop the escape sequences and keep the text.
func Paint(c Colour, text string) string { return "\x1b[" + string(c) + "m" + text + reset }

// isPaint reports whether seq is one of the escape sequences Paint makes:
// untrusted text can at most repeat them, never move the cursor, retitle
// the window, link or hide text.
func isPaint(seq []byte) bool {
	switch string(seq) {
	case reset, "\x1b[" + string(Green) + "m", "\x1b[" + string(Red) + "m", "\x1b[" + string(Yellow) + "m",
		"\x1b[" + string(Cyan) + "m", "\x1b[" + string(Dim) + "m":
		return true
	}
	return false
}
