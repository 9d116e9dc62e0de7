// Package diag carries user-facing diagnostics that point at a file position.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a 1-based position in a file, relative to the repository root.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return ""
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Severity orders diagnostics; only errors make a command fail.
type Severity int

const (
	Error Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem found in the user's files.
type Diagnostic struct {
	Pos      Pos      `json:"-"`
	Severity Severity `json:"-"`
	Msg      string   `json:"message"`
	Hint     string   `json:"hint,omitempty"` // what to do about it
}

func (d Diagnostic) String() string {
	var b strings.Builder
	if s := d.Pos.String(); s != "" {
		b.WriteString(s)
		b.WriteString(": ")
	}
	b.WriteString(d.Severity.String())
	b.WriteString(": ")
	b.WriteString(d.Msg)
	if d.Hint != "" {
		b.WriteString(" (")
		b.WriteString(d.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// List collects diagnostics so that one run reports every problem.
type List []Diagnostic

// Errorf appends an error at pos.
func (l *List) Errorf(pos Pos, hint, format string, args ...any) {
	*l = append(*l, Diagnostic{Pos: pos, Severity: Error, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Warnf appends a warning at pos.
func (l *List) Warnf(pos Pos, hint, format string, args ...any) {
	*l = append(*l, Diagnostic{Pos: pos, Severity: Warning, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Errors counts the diagnostics of severity Error.
func (l List) Errors() int {
	n := 0
	for _, d := range l {
		if d.Severity == Error {
			n++
		}
	}
	return n
}

// Sort orders by file, line, column, keeping insertion order for ties.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// Err returns the list as an error when it holds any error, else nil.
func (l List) Err() error {
	if l.Errors() == 0 {
		return nil
	}
	return ListError(l)
}

// ListError is a List used as an error value.
type ListError List

func (e ListError) Error() string {
	var b strings.Builder
	for i, d := range e {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}
