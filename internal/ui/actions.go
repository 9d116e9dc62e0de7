package ui

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Level is a workflow command's severity.
type Level string

// The annotation levels GitHub Actions shows.
const (
	Error   Level = "error"
	Warning Level = "warning"
	Notice  Level = "notice"
)

// Annotation is one workflow command that GitHub Actions shows on the run
// and, with a file, on that line of the pull request's diff.
type Annotation struct {
	Level   Level
	Title   string
	File    string
	Line    int
	Col     int
	Message string
}

// Annotate writes a as one workflow command line, its message and
// properties cleaned and escaped: nothing in them can end the command,
// start another, or add a property.
func Annotate(w io.Writer, a Annotation) error {
	var props []string
	if a.File != "" {
		props = append(props, "file="+EscapeProperty(a.File))
	}
	if a.Line > 0 {
		props = append(props, "line="+strconv.Itoa(a.Line))
	}
	if a.Col > 0 {
		props = append(props, "col="+strconv.Itoa(a.Col))
	}
	if a.Title != "" {
		props = append(props, "title="+EscapeProperty(a.Title))
	}
	cmd := "::" + string(a.Level)
	if len(props) > 0 {
		cmd += " " + strings.Join(props, ",")
	}
	line := cmd + "::" + EscapeData(a.Message) + "\n"
	if uw, ok := w.(*Writer); ok { // the one way past its neutralising
		return uw.command(line)
	}
	_, err := io.WriteString(w, line)
	return err
}

// EscapeData cleans a workflow command's message and escapes it by the
// rules of the GitHub Actions toolkit (command.ts): a line break would end
// the command.
func EscapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(Clean(s))
}

// EscapeProperty cleans and escapes a property value (title=, file=): a
// comma or a colon would end the property.
func EscapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(Clean(s))
}

// Output is one step output.
type Output struct{ Name, Value string }

// WriteOutputs appends outputs to the step's output file (the path in
// $GITHUB_OUTPUT; "" writes nothing). A value other than a plain token
// (letters, digits, . _ -) is written in the multiline form under a
// random delimiter it does not contain, so no value can set another
// output. Values are cleaned.
func WriteOutputs(path string, outputs ...Output) error {
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, o := range outputs {
		if o.Name == "" || strings.ContainsAny(o.Name, "=<\r\n") {
			return fmt.Errorf("%q cannot name a step output", o.Name)
		}
		v := Clean(o.Value)
		if plain(v) {
			fmt.Fprintf(&b, "%s=%s\n", o.Name, v)
			continue
		}
		delim := delimiter()
		for strings.Contains(v, delim) {
			delim = delimiter()
		}
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", o.Name, delim, v, delim)
	}
	return appendFile(path, b.String())
}

func plain(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// delimiter is what @actions/core's setOutput uses: ghadelimiter_ and a
// random hex string.
func delimiter() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ghadelimiter_" + hex.EncodeToString(b[:])
}

// AppendSummary appends Markdown, cleaned, to the job summary (the path
// in $GITHUB_STEP_SUMMARY; "" writes nothing).
func AppendSummary(path, markdown string) error {
	if path == "" {
		return nil
	}
	return appendFile(path, Clean(markdown))
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
