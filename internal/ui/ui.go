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
	"unicode"
	"unicode/utf8"
)

// Clean returns s fit for a terminal or a log: escape sequences (CSI, OSC,
// DCS and the others) removed whole, every other C0 control except
// newline and tab removed, DEL and the C1 controls (U+0080-U+009F) removed,
// the bidirectional embeddings, overrides and isolates (U+202A-U+202E,
// U+2066-U+2069), which reorder what a reader sees, removed, invalid UTF-8
// replaced by U+FFFD.
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
	scratch []byte // neutralise's output buffer, swapped with buf

	actions bool // a GitHub Actions log: no line becomes a workflow command
	body    bool // the line so far holds more than blanks (for actions)
	hashes  int  // how many '#' the output ends with, up to 2 (for actions)

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
	if w.actions {
		w.buf = w.neutralise(w.buf)
	}
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

// SetActions says whether w writes to a GitHub Actions log, where the
// runner reads a line as a workflow command when it starts with "::"
// after blanks, or holds "##[" anywhere (the older syntax). There, every
// line written through w that would be one gets a zero width space
// (U+200B) after its blanks or between "##" and "[": it shows as written
// and commands nothing. Annotate's own commands alone pass whole.
func (w *Writer) SetActions(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.actions = on
}

// zwsp is not white space to the runner's trim, so a line that starts
// with it starts with no command.
const zwsp = "\u200b"

// neutralise returns buf, cleaned text, with the zero width spaces that
// keep every line of it from being a workflow command. It carries the
// line's state over to the next write.
func (w *Writer) neutralise(buf []byte) []byte {
	out := w.scratch[:0]
	for i := 0; i < len(buf); {
		r, size := utf8.DecodeRune(buf[i:])
		switch {
		case r == '\n':
			w.body = false
		case !w.body && r == ':':
			out = append(out, zwsp...)
			w.body = true
		case !w.body && unicode.IsSpace(r): // the runner trims these
		case r == '[' && w.hashes == 2:
			out = append(out, zwsp...)
			w.body = true
		default:
			w.body = true
		}
		if r == '#' {
			w.hashes = min(w.hashes+1, 2)
		} else {
			w.hashes = 0
		}
		out = append(out, buf[i:i+size]...)
		i += size
	}
	w.scratch = buf
	return out
}

// command writes line, a workflow command Annotate made, as it is: on a
// line of its own, whatever was written before it.
func (w *Writer) command(line string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := line
	if w.midway {
		out = "\n" + out
	}
	if w.shown {
		out = eraseLine + out
		w.shown = false
	}
	w.midway, w.body, w.hashes = false, false, 0
	if w.status != "" {
		out += w.status
		w.shown = true
	}
	_, err := io.WriteString(w.w, out)
	return err
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
			case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
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
			case s[j] == '\n': // cut short (a truncated line): drop it, keep the line break
				return j, true
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
