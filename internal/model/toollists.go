package model

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// ToolLists are the tool allow and deny lists that bind a run: its
// schedule's and its actor's, and for a chained step those of every step
// before it too. Patterns are globs (path.Match: * matches across dots)
// over tool names and capabilities. Deny wins; every allow list must let
// a tool through, so one level can narrow what another allows, never
// widen it.
type ToolLists struct {
	Allow [][]string // the allow lists that apply, each non-empty
	Deny  []string
}

// With is l narrowed by one more level's lists; an empty allow list
// allows whatever the others allow.
func (l ToolLists) With(allow, deny []string) ToolLists {
	out := ToolLists{Allow: slices.Clone(l.Allow), Deny: slices.Clone(l.Deny)}
	if len(allow) > 0 {
		out.Allow = append(out.Allow, allow)
	}
	for _, d := range deny {
		if !slices.Contains(out.Deny, d) {
			out.Deny = append(out.Deny, d)
		}
	}
	return out
}

// ToolLists resolves the lists that bind runs of s after the lists of
// earlier chain steps (zero for a run of its own): its own, narrowed by
// its actor's.
func (p *Policies) ToolLists(s *Schedule, inherited ToolLists) ToolLists {
	l := inherited.With(s.ToolAllow, s.ToolDeny)
	if a := p.Actor(s.Actor); a != nil {
		l = l.With(a.ToolAllow, a.ToolDeny)
	}
	return l
}

// Refuses says why the lists refuse tool, or "" when they let it run. A
// deny pattern refuses a tool when it matches its name or any of its
// capabilities; an allow list lets it through when a pattern matches its
// name, or when patterns match every capability it declares.
func (l ToolLists) Refuses(tool *Tool) string {
	for _, d := range l.Deny {
		for _, n := range append([]string{tool.Name}, tool.Capabilities...) {
			if globMatch(d, n) {
				return fmt.Sprintf("tool %q is denied by tool_deny %q (matches %s)", tool.Name, d, n)
			}
		}
	}
	for _, a := range l.Allow {
		if !allows(a, tool) {
			return fmt.Sprintf("tool %q is not in tool_allow [%s]", tool.Name, strings.Join(a, ", "))
		}
	}
	return ""
}

func allows(list []string, tool *Tool) bool {
	hit := func(n string) bool {
		return slices.ContainsFunc(list, func(p string) bool { return globMatch(p, n) })
	}
	if hit(tool.Name) {
		return true
	}
	return len(tool.Capabilities) > 0 && !slices.ContainsFunc(tool.Capabilities, func(c string) bool { return !hit(c) })
}

func globMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// Env is the lists as a tool receives them: ASTRA_TOOL_ALLOW holds the
// allow lists, patterns separated by commas and lists by semicolons (a
// tool must match each list); ASTRA_TOOL_DENY the deny patterns,
// separated by commas. Either is "" when no such list applies.
func (l ToolLists) Env() (allow, deny string) {
	lists := make([]string, len(l.Allow))
	for i, a := range l.Allow {
		lists[i] = strings.Join(a, ",")
	}
	return strings.Join(lists, ";"), strings.Join(l.Deny, ",")
}
