package config

import (
	"path"
	"strings"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

const toolListHint = "globs of tool names or capabilities such as github.* or deploy_*; no commas or semicolons (they separate patterns and lists in ASTRA_TOOL_ALLOW)"

// validateToolPatterns checks one level's tool_allow and tool_deny.
func validateToolPatterns(m model.Meta, allow, deny []string, diags *diag.List) {
	if m.Has("tool_allow") && len(allow) == 0 {
		diags.Errorf(m.At("tool_allow"), "leave tool_allow out to allow any tool", "tool_allow is empty: it would allow no tool")
	}
	for i, list := range [][]string{allow, deny} {
		key := [...]string{"tool_allow", "tool_deny"}[i]
		for _, p := range list {
			if _, err := path.Match(p, ""); err != nil || p == "" || strings.ContainsAny(p, ",; ") {
				diags.Errorf(m.At(key), toolListHint, "invalid %s pattern %q", key, p)
			}
		}
	}
}

// validateScheduleTools refuses a schedule whose own tool lists, with its
// actor's, refuse its target tool: it could never run.
func validateScheduleTools(p *model.Policies, s *model.Schedule, tool *model.Tool, diags *diag.List) {
	validateToolPatterns(s.Meta, s.ToolAllow, s.ToolDeny, diags)
	if tool == nil {
		return
	}
	if why := p.ToolLists(s, model.ToolLists{}).Refuses(tool); why != "" {
		at := s.Meta.At("target_tool")
		for _, k := range []string{"tool_deny", "tool_allow"} {
			if s.Meta.Has(k) {
				at = s.Meta.At(k)
				break
			}
		}
		diags.Errorf(at, "change the schedule's (or its actor's) tool_allow / tool_deny, or its target_tool", "schedule %q can never run: %s", s.Name, why)
	}
}

// validateChainTools warns about a chain_next step whose tool the lists
// of the steps before it refuse: the run refuses it when the chain gets
// there, and records why.
func validateChainTools(cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	for _, s := range cfg.Schedules {
		lists := p.ToolLists(s, model.ToolLists{})
		cur := s
		for depth := 1; cur.ResultRoute.Type == model.RouteChainNext && depth < model.MaxChainDepth; depth++ {
			next := cfg.Schedule(cur.ResultRoute.Schedule)
			if next == nil || next == s {
				break
			}
			if tool := p.Tools[next.TargetTool]; tool != nil {
				if why := lists.Refuses(tool); why != "" {
					diags.Warnf(s.ResultRoute.Meta.At("schedule"), "a chain never widens what its first step may use",
						"chained step %q will be refused when the chain from %q reaches it: %s", next.Name, s.Name, why)
					break
				}
			}
			lists = p.ToolLists(next, lists)
			cur = next
		}
	}
}
