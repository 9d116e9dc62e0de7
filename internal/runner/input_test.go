package runner

import (
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/inputschema"
	"github.com/astra-gitops/astra/internal/model"
)

func TestInputRefused(t *testing.T) {
	s, err := inputschema.Compile([]byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tool := &model.Tool{Name: "x", Input: s}
	evented := &model.Schedule{OnEvent: "e"}
	for _, c := range []struct {
		name string
		t    *task
		want string
	}{
		{"matching payload", &task{tool: tool, sched: &model.Schedule{Payload: map[string]any{"n": 1}}}, ""},
		{"payload missing n", &task{tool: tool, sched: &model.Schedule{}}, `payload does not match tool "x"'s input_schema: at '': missing property 'n'`},
		{"an event schedule without payload: only the event counts", &task{tool: tool, sched: evented, eventData: `{"n":2}`}, ""},
		{"a bad event", &task{tool: tool, sched: evented, eventData: `{"n":"2"}`}, "event payload does not match"},
		{"no schema", &task{tool: &model.Tool{Name: "y"}, sched: evented, eventData: `{}`}, ""},
	} {
		got := inputRefused(c.t)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: inputRefused = %q, want %q", c.name, got, c.want)
		}
	}
}
