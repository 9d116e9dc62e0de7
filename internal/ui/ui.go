// Package ui is the one way out of astra to people and to GitHub Actions:
// the terminal (or a CI log), workflow commands (annotations), step outputs
// ($GITHUB_OUTPUT) and the job summary ($GITHUB_STEP_SUMMARY). Much of what
// astra prints comes from elsewhere: tool output, schedule names, pull
// request titles, error messages from GitHub. Here, in one place, that
// text loses what could drive a terminal or forge a workflow command:
// escape sequences, control characters, line breaks inside a command.
//
// The CLI wraps its stdout and stderr in a Writer, so every byte it prints
// is cleaned; colour is the one escape that passes, and only the colours
// Paint makes, only when the Writer allows them.
package ui

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Clean returns s fit for a terminal or a log: escape sequences (CSI, OSC,
// DCS and the others) removed whole, every other C0 control except
// newline and tab removed, DEL and the C1 controls (U+0080-U+009F) removed,
// invalid UTF-8 replaced by U+FFFD.
func Clean(s string) string {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < 0x20 && b != '\n' && b != '\t') || b >= 0x7f {
			out, _ := clean(make([]byte, 0, len(s)), []byte(s), false, true)
			return string(out)
		}
	}
	return s // the common case: printable ASCII
}

// Writer cleans what is written through it, as Clean does, across Write
// calls: a sequence or a character split between two writes is held back
// until it is complete. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	colour  bool
	pending []byte // an escape sequence or a UTF-8 character not yet complete
	buf     []byte

	live   bool   // a terminal: a status line may be drawn (SetLive)
	status string // the status line, "" for none
	shown  bool   // the status line is on the screen
	midway bool   // what was written last did not end its line
}

// NewWriter returns a Writer onto w. With colour, the colours of Paint
// pass; no other escape sequence ever does.
func NewWriter(w io.Writer, colour bool) *Writer { return &Writer{w: w, colour: colour} }

// Write cleans p and writes the result. It reports all of p as written
// when the underlying write succeeds, whatever was left out.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	src := p
	if len(w.pending) > 0 {
		src = append(w.pending, p...)
	}
	var n int
	w.buf, n = clean(w.buf[:0], src, w.colour, false)
	w.pending = append(w.pending[:0:0], src[n:]...)
	if len(w.buf) > 0 {
		if w.shown { // the text goes where the status line was; it follows
			w.buf = append([]byte(eraseLine), w.buf...)
			w.shown = false
		}
		w.midway = w.buf[len(w.buf)-1] != '\n'
		if w.status != "" && !w.midway {
			w.buf = append(w.buf, w.status...)
			w.shown = true
		}
		if _, err := w.w.Write(w.buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// eraseLine returns to the start of the line and clears it.
const eraseLine = "\r\x1b[K"

// statusWidth bounds a status line, so that it never wraps on a terminal
// of the usual width (a wrapped line could not be erased).
const statusWidth = 79

// SetLive says whether w is a terminal, where SetStatus draws. A log or a
// file never gets a status line.
func (w *Writer) SetLive(live bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = live
}

// Live reports whether w draws status lines.
func (w *Writer) Live() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live
}

// SetStatus shows s on the status line: one line, cleaned, under what is
// written through w and redrawn after it; "" removes it. Only a live
// Writer draws it.
func (w *Writer) SetStatus(s string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.live {
		return nil
	}
	s = strings.Join(strings.Fields(Clean(s)), " ")
	if utf8.RuneCountInString(s) > statusWidth {
		s = string([]rune(s)[:statusWidth-1]) + "…"
	}
	w.status = s
	if w.midway { // drawn when the line ends
		return nil
	}
	out := s
	if w.shown {
		out = eraseLine + s
	}
	w.shown = s != ""
	if out == "" {
		return nil
	}
	_, err := io.WriteString(w.w, out)
	return err
}

// maxSequence bounds how much of an unfinished escape sequence a Writer
// holds back; a longer one loses its ESC and prints as plain text.
const maxSequence = 4096

// clean appends src, cleaned, to dst. Unless final, an escape sequence or
// a UTF-8 character cut off at the end of src is not consumed: n is how
// much of src was.
func clean(dst, src []byte, colour, final bool) (out []byte, n int) {
	i := 0
	for i < len(src) {
		b := src[i]
		switch {
		case b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7f):
			dst = append(dst, b)
			i++
		case b == 0x1b:
			size, complete := sequence(src[i:])
			switch {
			case !complete && !final && len(src)-i < maxSequence:
				return dst, i // wait for the rest
			case !complete:
				i++ // a lone ESC: drop it, print what follows
			default:
				if colour && isPaint(src[i:i+size]) {
					dst = append(dst, src[i:i+size]...)
				}
				i += size
			}
		case b < 0x80: // C0 controls and DEL
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			switch {
			case r == utf8.RuneError && size <= 1 && !final && !utf8.FullRune(src[i:]):
				return dst, i // a character cut off
			case r == utf8.RuneError && size <= 1:
				dst = utf8.AppendRune(dst, utf8.RuneError)
				i++
			case r >= 0x80 && r <= 0x9f: // C1 controls (0x9b is a CSI)
				i += size
			default:
				dst = append(dst, src[i:i+size]...)
				i += size
			}
		}
	}
	return dst, i
}

// sequence measures the escape sequence s starts with (s[0] is ESC, as
// ECMA-48 has them): its size, and whether it is complete.
func sequence(s []byte) (size int, complete bool) {
	if len(s) < 2 {
		return 0, false
	}
	switch c := s[1]; {
	case c == '[': // CSI: parameters, intermediates, a final byte
		j := 2
		for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
			j++
		}
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		switch {
		case j == len(s):
			return 0, false
		case s[j] >= 0x40 && s[j] <= 0x7e:
			return j + 1, true
		}
		return j, true // malformed: drop what was read, print the rest
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_': // strings up to BEL or ST
		for j := 2; j < len(s); j++ {
			switch {
			case s[j] == 0x07:
				return j + 1, true
			case s[j] == 0x1b && j+1 == len(s):
				return 0, false
			case s[j] == 0x1b && s[j+1] == '\\':
				return j + 2, true
			case s[j] == 0x1b:
				return j, true // a new sequence ends this one
			case s[j] == 0xc2 && j+1 < len(s) && s[j+1] == 0x9c: // ST as a UTF-8 C1
				return j + 2, true
			}
		}
		return 0, false
	case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte
		j := 1
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		switch {
		case j == len(s):
			return 0, false
		case s[j] >= 0x30 && s[j] <= 0x7e:
			return j + 1, true
		}
		return j, true
	case c >= 0x30 && c <= 0x7e:
		return 2, true
	}
	return 1, true // ESC before a control: drop the ESC alone
}
