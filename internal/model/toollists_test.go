package model

import (
	"strings"
	"testing"
)

func TestToolLists(t *testing.T) {
	p := &Policies{Actors: []*Actor{
		{Pattern: "agent_*", ToolAllow: []string{"github.*"}, ToolDeny: []string{"github.repos.delete"}},
		{Pattern: "astra"},
	}}
	issue := &Tool{Name: "comment", Capabilities: []string{"github.issues.write"}}
	mixed := &Tool{Name: "sync", Capabilities: []string{"github.issues.write", "slack.post"}}
	wipe := &Tool{Name: "wipe", Capabilities: []string{"github.repos.delete"}}
	bare := &Tool{Name: "bare"}
	cases := []struct {
		name  string
		s     *Schedule
		inh   ToolLists
		tool  *Tool
		want  string // "" runs; else a part of the refusal
		allow string
		deny  string
	}{
		{"no lists: anything", &Schedule{Actor: "astra"}, ToolLists{}, mixed, "", "", ""},
		{"actor allow by capability", &Schedule{Actor: "agent_1"}, ToolLists{}, issue, "", "github.*", "github.repos.delete"},
		{"every capability must be allowed", &Schedule{Actor: "agent_1"}, ToolLists{}, mixed, "not in tool_allow [github.*]", "github.*", "github.repos.delete"},
		{"a tool without capabilities passes by name only", &Schedule{Actor: "agent_1"}, ToolLists{}, bare, "not in tool_allow", "github.*", "github.repos.delete"},
		{"the actor's deny wins over the schedule's allow", &Schedule{Actor: "agent_1", ToolAllow: []string{"wipe"}}, ToolLists{}, wipe, `denied by tool_deny "github.repos.delete"`, "wipe;github.*", "github.repos.delete"},
		{"the schedule allows by name, the actor does not widen", &Schedule{Actor: "agent_1", ToolAllow: []string{"bare"}}, ToolLists{}, bare, "not in tool_allow [github.*]", "bare;github.*", "github.repos.delete"},
		{"an earlier step's deny binds", &Schedule{Actor: "astra"}, ToolLists{}.With(nil, []string{"sy?c"}), mixed, `tool_deny "sy?c" (matches sync)`, "", "sy?c"},
		{"deny patterns are not repeated", &Schedule{Actor: "agent_1", ToolDeny: []string{"github.repos.delete"}}, ToolLists{}, issue, "", "github.*", "github.repos.delete"},
	}
	for _, c := range cases {
		l := p.ToolLists(c.s, c.inh)
		got := l.Refuses(c.tool)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: Refuses = %q, want %q", c.name, got, c.want)
		}
		if a, d := l.Env(); a != c.allow || d != c.deny {
			t.Errorf("%s: Env = %q, %q, want %q, %q", c.name, a, d, c.allow, c.deny)
		}
	}
}

// With never widens: a level with no allow list keeps the others'.
func TestToolListsNarrowOnly(t *testing.T) {
	l := ToolLists{}.With([]string{"a"}, nil).With(nil, nil)
	if got := l.Refuses(&Tool{Name: "b"}); got == "" {
		t.Error("a level without tool_allow widened the list before it")
	}
}
