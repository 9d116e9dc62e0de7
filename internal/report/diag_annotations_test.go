package report

import (
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/diag"
)

// DiagnosticAnnotations writes one workflow command per diagnostic, whatever its
// text holds: a newline, a carriage return or a percent sign cannot end
// the command or be read as an escape, and a comma or a colon in a file
// name cannot end the property.
func TestDiagnosticAnnotations(t *testing.T) {
	l := diag.List{
		{Pos: diag.Pos{File: "schedules/a,b:c.yaml", Line: 3, Col: 7}, Msg: "bad\nvalue 100%", Hint: "see ::error::"},
		{Pos: diag.Pos{File: "policies/p.yaml"}, Severity: diag.Warning, Msg: "line one\r\nline two"},
		{Msg: "no position"},
	}
	var b strings.Builder
	DiagnosticAnnotations(&b, l)
	want := "::error file=schedules/a%2Cb%3Ac.yaml,line=3,col=7::bad%0Avalue 100%25 (see ::error::)\n" +
		"::warning file=policies/p.yaml::line one%0Aline two\n" +
		"::error::no position\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if strings.Count(b.String(), "\n") != len(l) {
		t.Fatalf("not one line per diagnostic:\n%s", b.String())
	}
}
