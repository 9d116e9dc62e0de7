package ui

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile is text a tool, a schedule name or a pull request title could
// carry: every kind of sequence that drives a terminal.
var hostile = []struct{ name, in, want string }{
	{"plain", "ran nightly: ok\n\tdone", "ran nightly: ok\n\tdone"},
	{"unicode", "résumé 日本 ✅", "résumé 日本 ✅"},
	{"clear screen", "a\x1b[2Jb", "ab"},
	{"cursor up and erase", "ok\x1b[1A\x1b[2Kfaked", "okfaked"},
	{"colour", "\x1b[31mred\x1b[0m", "red"},
	{"window title (OSC, BEL)", "\x1b]0;pwned\x07text", "text"},
	{"hyperlink (OSC 8, ST)", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"},
	{"DCS", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
	{"charset switch", "\x1b(0lqk\x1b(B", "lqk"},
	{"two-byte ESC", "\x1bcreset", "reset"},
	{"C1 CSI", "a\u009b2Jb", "a2Jb"},
	{"C1 OSC with C1 ST", "a\u009d0;x\u009cb", "a0;xb"},
	{"bidi override (trojan source)", "a\u202eexe.gnp\u202c \u2067x\u2069 b", "aexe.gnp x b"},
	{"carriage return overwrite", "safe\rEVIL", "safeEVIL"},
	{"backspace, bell, DEL, NUL", "a\bb\x07c\x7fd\x00e", "abcde"},
	{"invalid UTF-8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
	{"lone ESC at the end", "end\x1b", "end"},
	{"ESC before a newline", "x\x1b\ny", "x\ny"},
	{"unterminated OSC", "x\x1b]0;title never ends", "x]0;title never ends"},
	{"OSC cut short by a line break", "x\x1b]8;;http://evil.example\nnext", "x\nnext"},
	{"malformed CSI", "x\x1b[12\ny", "x\ny"},
}

func TestClean(t *testing.T) {
	for _, c := range hostile {
		if got := Clean(c.in); got != c.want {
			t.Errorf("%s: Clean(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestWriterAcrossWrites: a Writer cleans as Clean does however the text
// is cut into writes, byte by byte included.
func TestWriterAcrossWrites(t *testing.T) {
	for _, c := range hostile {
		if c.name == "unterminated OSC" || c.name == "lone ESC at the end" || strings.HasSuffix(c.in, "\xc3") {
			continue // held back for a rest that never comes
		}
		for _, step := range []int{1, 2, 3, 7} {
			var out bytes.Buffer
			w := NewWriter(&out, false)
			for i := 0; i < len(c.in); i += step {
				if n, err := w.Write([]byte(c.in[i:min(i+step, len(c.in))])); err != nil || n != min(step, len(c.in)-i) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if out.String() != c.want {
				t.Errorf("%s in writes of %d: %q, want %q", c.name, step, out.String(), c.want)
			}
		}
	}
}

// TestColour: a Writer that allows colour passes Paint's sequences and no
// other; one that does not keeps only the text.
func TestColour(t *testing.T) {
	in := Paint(Green, "ran") + " \x1b[8mhidden\x1b[0m \x1b[2J" + Paint(Red, "failed")
	var colour, plain bytes.Buffer
	NewWriter(&colour, true).Write([]byte(in))
	NewWriter(&plain, false).Write([]byte(in))
	if want := "\x1b[32mran\x1b[0m hidden\x1b[0m \x1b[31mfailed\x1b[0m"; colour.String() != want {
		t.Errorf("with colour: %q, want %q", colour.String(), want)
	}
	if want := "ran hidden failed"; plain.String() != want {
		t.Errorf("without colour: %q, want %q", plain.String(), want)
	}
}

func TestAnnotate(t *testing.T) {
	var b bytes.Buffer
	Annotate(&b, Annotation{Level: Error, Title: "astra: deploy, eu: a|b `x`\nnext failed", Message: "k (exit) line1\nline2\r\x1b[2J100%"})
	Annotate(&b, Annotation{Level: Warning, File: "schedules/a,b.yaml", Line: 3, Col: 7, Message: "unknown key"})
	Annotate(&b, Annotation{Level: Notice, Message: "::add-mask::x"})
	want := "::error title=astra%3A deploy%2C eu%3A a|b `x`%0Anext failed::k (exit) line1%0Aline2100%25\n" +
		"::warning file=schedules/a%2Cb.yaml,line=3,col=7::unknown key\n" +
		"::notice::::add-mask::x\n"
	if b.String() != want {
		t.Errorf("annotations:\n got %q\nwant %q", b.String(), want)
	}
}

// parseOutputs reads a $GITHUB_OUTPUT file as the runner does: name=value
// lines and name<<DELIMITER blocks.
func parseOutputs(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if name, delim, ok := strings.Cut(lines[i], "<<"); ok {
			var v []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				v = append(v, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("%s: delimiter %s never closes", name, delim)
			}
			out[name] = strings.Join(v, "\n")
			continue
		}
		name, v, _ := strings.Cut(lines[i], "=")
		out[name] = v
	}
	return out
}

// TestWriteOutputs: whatever a value holds, it is read back as itself
// and sets no other output.
func TestWriteOutputs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "output")
	injected := "x\nfailed=0\nghadelimiter_00\ncount<<EOF"
	if err := WriteOutputs(p, Output{"ran", "3"}, Output{"matrix", `{"include":[{"key":"a=b"}]}`}, Output{"detail", injected},
		Output{"empty", ""}, Output{"title", "a\x1b[2Jb"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	got := parseOutputs(t, string(raw))
	want := map[string]string{"ran": "3", "matrix": `{"include":[{"key":"a=b"}]}`, "detail": injected, "empty": "", "title": "ab"}
	if len(got) != len(want) {
		t.Fatalf("outputs %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if !strings.HasPrefix(string(raw), "ran=3\nmatrix<<ghadelimiter_") {
		t.Errorf("file starts %q", string(raw)[:40])
	}
	if err := WriteOutputs(p, Output{"a=b", "1"}); err == nil {
		t.Error("a name with = was written")
	}
	if err := WriteOutputs("", Output{"ran", "1"}); err != nil {
		t.Error(err)
	}
}

func TestAppendSummary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "summary.md")
	for _, md := range []string{"## astra\n", "| \x1b]0;x\x07name |\n"} {
		if err := AppendSummary(p, md); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "## astra\n| name |\n" {
		t.Errorf("summary %q", b)
	}
}

// TestActionsNeutralise: under GitHub Actions, no line written through a
// Writer reads as a workflow command, however the writes cut it; what
// Annotate writes through the same Writer passes whole.
func TestActionsNeutralise(t *testing.T) {
	in := "::error::pwned\n  \u00a0::add-mask::hunter2\n\t::set-output name=x::y\nok ##[error]old\n" +
		"a::b is fine\n::stop-commands::tok\nend without newline "
	want := "\u200b::error::pwned\n  \u00a0\u200b::add-mask::hunter2\n\t\u200b::set-output name=x::y\nok ##\u200b[error]old\n" +
		"a::b is fine\n\u200b::stop-commands::tok\nend without newline \n" +
		"::warning title=astra::::add-mask::x\n\u200b::after\n"
	for _, step := range []int{1, 2, 5, len(in)} {
		var out bytes.Buffer
		w := NewWriter(&out, false)
		w.SetActions(true)
		for i := 0; i < len(in); i += step {
			w.Write([]byte(in[i:min(i+step, len(in))]))
		}
		Annotate(w, Annotation{Level: Warning, Title: "astra", Message: "::add-mask::x"})
		w.Write([]byte("::after\n"))
		if out.String() != want {
			t.Errorf("in writes of %d:\n%q\nwant\n%q", step, out.String(), want)
		}
	}
	var plain bytes.Buffer // outside GitHub Actions, text is left as it is
	NewWriter(&plain, false).Write([]byte("::error::x\n"))
	if plain.String() != "::error::x\n" {
		t.Errorf("without actions: %q", plain.String())
	}
}
