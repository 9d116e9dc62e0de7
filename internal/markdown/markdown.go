// Package markdown puts text astra did not write (a tool's output, a
// schedule's name or description, a reason) into the Markdown of pull
// request and issue bodies so that it shows as written and cannot format:
// no heading, link, image, HTML, table cell or notifying @mention of its
// own, however it is made.
package markdown

import (
	"strings"
	"unicode/utf8"
)

// zwj goes after every @: "@\u200dteam" shows as "@team" and mentions
// nobody.
const zwj = "\u200d"

// Fence returns text as a fenced code block with the info string info:
// its fence is a run of backticks longer than any in text, so nothing
// inside can close it, and GitHub neither renders nor notifies from what
// is inside. It ends with a newline.
func Fence(info, text string) string {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	text = strings.TrimSuffix(valid(text), "\n")
	return fence + info + "\n" + text + "\n" + fence + "\n"
}

// Code returns text as an inline code span on one line (line breaks
// become spaces; a | is escaped, as a table cell needs), delimited by more
// backticks than any run in it.
func Code(text string) string {
	text = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`).Replace(valid(text))
	ticks := strings.Repeat("`", longestRun(text, '`')+1)
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") || text == "" {
		text = " " + text + " " // CommonMark strips one space each side
	}
	return ticks + text + ticks
}

// Text returns text as plain Markdown prose on one line: every ASCII
// punctuation character backslash-escaped (no emphasis, heading, list,
// link, image, HTML, autolink or table cell can start), line breaks made
// spaces, and a zero width joiner after each @ so that it mentions nobody.
func Text(text string) string {
	var b strings.Builder
	for _, r := range valid(text) {
		switch {
		case r == '\r' || r == '\n':
			b.WriteByte(' ')
		case r == '@':
			b.WriteString("@" + zwj)
		case r < 0x80 && isPunct(byte(r)):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPunct(c byte) bool { return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?[\\]^_`{|}~", c) >= 0 }

func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}

func valid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
