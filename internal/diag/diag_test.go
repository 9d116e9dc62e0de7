package diag

import (
	"errors"
	"strings"
	"testing"
)

func TestPosString(t *testing.T) {
	for _, c := range []struct {
		pos  Pos
		want string
	}{
		{Pos{}, ""},
		{Pos{Line: 3, Col: 4}, ""}, // no file: no position at all
		{Pos{File: "schedules/a.yaml"}, "schedules/a.yaml"},
		{Pos{File: "schedules/a.yaml", Col: 4}, "schedules/a.yaml"},
		{Pos{File: "schedules/a.yaml", Line: 3}, "schedules/a.yaml:3"},
		{Pos{File: "schedules/a.yaml", Line: 3, Col: 4}, "schedules/a.yaml:3:4"},
	} {
		if got := c.pos.String(); got != c.want {
			t.Errorf("%#v: got %q, want %q", c.pos, got, c.want)
		}
	}
}

func TestDiagnosticString(t *testing.T) {
	for _, c := range []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{Pos: Pos{File: "p.yaml", Line: 2, Col: 5}, Msg: "unknown tool \"x\"", Hint: "did you mean \"y\"?"},
			`p.yaml:2:5: error: unknown tool "x" (did you mean "y"?)`},
		{Diagnostic{Pos: Pos{File: "p.yaml"}, Severity: Warning, Msg: "no schedules"}, "p.yaml: warning: no schedules"},
		{Diagnostic{Msg: "nothing to point at"}, "error: nothing to point at"},
	} {
		if got := c.d.String(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestListCountsSortsAndFails(t *testing.T) {
	var l List
	if l.Err() != nil || l.Errors() != 0 {
		t.Fatal("an empty list is no error")
	}
	l.Warnf(Pos{File: "b.yaml", Line: 1}, "", "w %d", 1)
	if l.Err() != nil {
		t.Fatal("warnings alone are no error")
	}
	l.Errorf(Pos{File: "b.yaml", Line: 1}, "", "e %d", 1) // same position as the warning: stays after it
	l.Errorf(Pos{File: "a.yaml", Line: 9, Col: 2}, "fix it", "e %s", "2")
	l.Errorf(Pos{File: "a.yaml", Line: 9, Col: 1}, "", "e 3")
	l.Warnf(Pos{File: "a.yaml", Line: 10}, "", "w 2")
	if l.Errors() != 3 {
		t.Fatalf("errors %d, want 3", l.Errors())
	}
	l.Sort()
	var got []string
	for _, d := range l {
		got = append(got, d.Msg)
	}
	if want := "e 3,e 2,w 2,w 1,e 1"; strings.Join(got, ",") != want {
		t.Fatalf("sorted %s, want %s", strings.Join(got, ","), want)
	}
	err := l.Err()
	var le ListError
	if !errors.As(err, &le) || len(le) != 5 {
		t.Fatalf("Err: %v", err)
	}
	want := "a.yaml:9:1: error: e 3\n" +
		"a.yaml:9:2: error: e 2 (fix it)\n" +
		"a.yaml:10: warning: w 2\n" +
		"b.yaml:1: warning: w 1\n" +
		"b.yaml:1: error: e 1"
	if err.Error() != want {
		t.Fatalf("error text\n%s\nwant\n%s", err, want)
	}
}

// WriteGitHub writes one workflow command per diagnostic, whatever its
// text holds: a newline, a carriage return or a percent sign cannot end
// the command or be read as an escape, and a comma or a colon in a file
// name cannot end the property.
func TestWriteGitHub(t *testing.T) {
	l := List{
		{Pos: Pos{File: "schedules/a,b:c.yaml", Line: 3, Col: 7}, Msg: "bad\nvalue 100%", Hint: "see ::error::"},
		{Pos: Pos{File: "policies/p.yaml"}, Severity: Warning, Msg: "line one\r\nline two"},
		{Msg: "no position"},
	}
	var b strings.Builder
	l.WriteGitHub(&b)
	want := "::error file=schedules/a%2Cb%3Ac.yaml,line=3,col=7::bad%0Avalue 100%25 (see ::error::)\n" +
		"::warning file=policies/p.yaml::line one%0D%0Aline two\n" +
		"::error ::no position\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if strings.Count(b.String(), "\n") != len(l) {
		t.Fatalf("not one line per diagnostic:\n%s", b.String())
	}
}

// The escapes are the GitHub Actions toolkit's (command.ts escapeData and
// escapeProperty): % first, so an escape is never escaped again.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"%0A", "%250A", "%250A"},
		{"a\r\nb", "a%0D%0Ab", "a%0D%0Ab"},
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
