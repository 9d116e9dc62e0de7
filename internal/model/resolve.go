package model

import (
	"fmt"
	"path"
	"strings"
)

// Actor finds the actor definition for id: an exact entry wins,
// then the matching glob pattern with the longest literal part, then the
// first such pattern in file order. Nil means unknown: callers fail closed.
func (p *Policies) Actor(id string) *Actor {
	var best *Actor
	bestLen := -1
	for _, a := range p.Actors {
		if a.Pattern == id {
			return a
		}
		if ok, err := path.Match(a.Pattern, id); err != nil || !ok {
			continue
		}
		if n := literalLen(a.Pattern); n > bestLen {
			best, bestLen = a, n
		}
	}
	return best
}

func literalLen(pattern string) int {
	n := 0
	for _, r := range pattern {
		if !strings.ContainsRune("*?[]\\", r) {
			n++
		}
	}
	return n
}

// grants reports whether scopes grant capability, by these rules:
// exact match, an ancestor wildcard ("notion.*" grants "notion.pages.create"),
// or the global "*".
func grants(scopes []string, capability string) bool {
	for _, s := range scopes {
		if s == "*" || s == capability {
			return true
		}
		if prefix, ok := strings.CutSuffix(s, ".*"); ok && strings.HasPrefix(capability, prefix+".") {
			return true
		}
	}
	return false
}

// Missing lists the capabilities that scopes do not grant.
func Missing(scopes, capabilities []string) []string {
	var out []string
	for _, c := range capabilities {
		if !grants(scopes, c) {
			out = append(out, c)
		}
	}
	return out
}

// ApprovalsRequired is how many distinct approvers an approval of s
// needs: the schedule's approvals_required, else its task policy's, else 1.
func (p *Policies) ApprovalsRequired(s *Schedule) int {
	if s.ApprovalsReq > 0 {
		return s.ApprovalsReq
	}
	if tp := p.TaskPolicy(s.TargetTool, s.Tenant); tp != nil && tp.Approvals > 0 {
		return tp.Approvals
	}
	return 1
}

// TaskPolicy resolves the policy for a task type (the tool name) and tenant
// thus: the tenant's own policy, else the global one, else nil,
// which means the default auto_execute = true.
func (p *Policies) TaskPolicy(taskType, tenant string) *TaskPolicy {
	var global *TaskPolicy
	for _, tp := range p.TaskPolicies {
		if tp.TaskType != taskType {
			continue
		}
		if tenant != "" && tp.Tenant == tenant {
			return tp
		}
		if tp.Tenant == "" {
			global = tp
		}
	}
	return global
}

// Builtin tool names (tier-0 introspection, plus the budget report).
const (
	BuiltinTasksList       = "tasks_list"
	BuiltinTasksByTrace    = "tasks_by_trace"
	BuiltinTasksLastFailed = "tasks_last_failed"
	BuiltinBudget          = "budget"
)

// BuiltinTools is the implicit catalog entry of each builtin. A policy file
// may redeclare one to change its capabilities, but not its kind.
func BuiltinTools() map[string]*Tool {
	mk := func(name, desc, capability string) *Tool {
		return &Tool{Name: name, Kind: KindBuiltin, Description: desc, Tier: TierReadOnly,
			Capabilities: []string{capability}, DryRunSupported: true, Idempotent: true}
	}
	return map[string]*Tool{
		BuiltinTasksList:       mk(BuiltinTasksList, "Query task execution history", "astra.tasks.read"),
		BuiltinTasksByTrace:    mk(BuiltinTasksByTrace, "Inspect one execution trace", "astra.tasks.read"),
		BuiltinTasksLastFailed: mk(BuiltinTasksLastFailed, "Analyze recent failures", "astra.tasks.read"),
		BuiltinBudget:          mk(BuiltinBudget, "Report per-schedule and global budget use", "astra.budget.read"),
	}
}

// ApprovalReasons lists every rule that demands a human approval; empty
// means the run may go ahead on its own.
func (p *Policies) ApprovalReasons(s *Schedule, tool *Tool) []string {
	var r []string
	if s.SafetyTier >= TierExternal {
		r = append(r, "safety tier 2 (external)")
	}
	tp := p.TaskPolicy(tool.Name, s.Tenant)
	if tp != nil && !tp.AutoExecute {
		who := "global"
		if tp.Tenant != "" {
			who = "tenant " + tp.Tenant
		}
		r = append(r, fmt.Sprintf("task policy for %s (%s) has auto_execute: false", tool.Name, who))
	}
	if tool.RequiresApproval {
		r = append(r, fmt.Sprintf("tool %s requires approval", tool.Name))
	}
	if s.Autonomy.NeedsApproval() {
		r = append(r, fmt.Sprintf("autonomy %s", s.Autonomy))
	}
	switch {
	case tool.RiskLevel >= RiskHigh:
		// Whatever the tier, the autonomy and the task policy.
		r = append(r, fmt.Sprintf("tool %s has risk_level high", tool.Name))
	case tp != nil && tool.RiskLevel > tp.MaxRiskLevel:
		r = append(r, fmt.Sprintf("tool risk %s is above the policy's max_risk_level %s", tool.RiskLevel, tp.MaxRiskLevel))
	}
	return r
}
