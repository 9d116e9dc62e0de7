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
