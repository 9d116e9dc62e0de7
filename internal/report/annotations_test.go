package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/runner"
)

// A schedule name with a comma, colon, pipe, backtick or newline must not
// break a workflow command's property or a job-summary table cell.
func TestEscapingOfNames(t *testing.T) {
	name := "deploy, eu: a|b `x`\nnext"
	rep := &runner.Report{Command: "run-due", Now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), Outcomes: []*runner.Outcome{
		{Name: name, Tool: "t|u", Key: "k", Action: runner.ActionFailed, Reason: "exit", Detail: "line1\nline2"},
	}}
	var a bytes.Buffer
	Annotations(&a, rep)
	want := "::error title=astra%3A deploy%2C eu%3A a|b `x`%0Anext failed::k (exit) line1%0Aline2\n"
	if a.String() != want {
		t.Errorf("annotation:\n got %q\nwant %q", a.String(), want)
	}
	var s bytes.Buffer
	Summary(&s, rep, &model.Config{}, introspect.Budget{})
	var row string
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.HasPrefix(l, "| ❌") {
			row = l
		}
	}
	// Seven unescaped pipes: the row's six cells survive the name.
	if n := strings.Count(strings.ReplaceAll(row, `\|`, ""), "|"); n != 7 {
		t.Errorf("summary row has %d cell separators, want 7: %q", n, row)
	}
	if strings.Count(row, "`") != 4 {
		t.Errorf("summary row breaks its code spans: %q", row)
	}
	if !strings.HasPrefix(s.String(), "## astra run-due at") {
		t.Errorf("summary title: %q", strings.SplitN(s.String(), "\n", 2)[0])
	}
}
