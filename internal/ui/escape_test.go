package ui

import "testing"

// The escapes are the GitHub Actions toolkit's (command.ts escapeData and
// escapeProperty): % first, so an escape is never escaped again.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"%0A", "%250A", "%250A"},
		{"a\r\nb", "a%0Ab", "a%0Ab"}, // a bare carriage return is a control character: dropped
		{"k: v, w", "k: v, w", "k%3A v%2C w"},
		{"100%,", "100%25,", "100%25%2C"},
	} {
		if got := EscapeData(c.in); got != c.data {
			t.Errorf("EscapeData(%q) = %q, want %q", c.in, got, c.data)
		}
		if got := EscapeProperty(c.in); got != c.prop {
			t.Errorf("EscapeProperty(%q) = %q, want %q", c.in, got, c.prop)
		}
	}
}
