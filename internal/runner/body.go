package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/model"
)

// approvalBody is the pull request text: in plain words, what will run,
// with which payload (secrets redacted), as whom, and why it needs a human.
func approvalBody(r *Runner, t *task, d gate.Decision, expires time.Time) string {
	sc, tool := t.sched, t.tool
	var b strings.Builder
	fmt.Fprintf(&b, "astra wants to run **%s** and needs a human decision.\n\n", sc.Name)
	if sc.Description != "" {
		fmt.Fprintf(&b, "> %s\n\n", r.opts.Redact.String(sc.Description))
	}
	b.WriteString("**Merge this pull request to approve one run. Close it to reject.**\n\n")
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, strings.ReplaceAll(v, "|", "\\|")) }
	row("Schedule", fmt.Sprintf("`%s` (`%s`)", sc.Name, sc.ID))
	if sc.Tenant != "" {
		row("Tenant", sc.Tenant)
	}
	row("Tool", fmt.Sprintf("`%s` (%s)", tool.Name, toolSummary(r, tool)))
	row("Actor", fmt.Sprintf("`%s`, autonomy %s", sc.Actor, sc.Autonomy))
	row("Safety tier", fmt.Sprintf("%d (%s)", sc.SafetyTier, sc.SafetyTier))
	row("Slot", t.slot.UTC().Format(time.RFC3339)+" ("+t.mode+")")
	row("Idempotency key", "`"+t.key+"`")
	row("Expires", expires.UTC().Format(time.RFC3339)+" (after that the request is closed and the next slot asks again)")
	if role := approverRole(r.cfg, sc); role != "" {
		row("Who may approve", fmt.Sprintf("role `%s`: %s", role, strings.Join(r.cfg.Policies.Approvers[role], ", ")))
	}
	b.WriteString("\n**Why approval is needed**\n\n")
	for _, reason := range d.ApprovalReasons {
		fmt.Fprintf(&b, "- %s\n", reason)
	}
	payload, _ := json.MarshalIndent(r.opts.Redact.Payload(sc.Payload), "", "  ")
	fmt.Fprintf(&b, "\n**Payload** (secrets redacted)\n\n```json\n%s\n```\n", payload)
	if t.draft != nil {
		b.WriteString("\n**Dry run (L1 Draft)**\n\n")
		switch {
		case t.draft.WouldRun != "":
			fmt.Fprintf(&b, "The tool cannot dry-run; it would run:\n\n```\n%s\n```\n", t.draft.WouldRun)
		default:
			fmt.Fprintf(&b, "Status `%s`. Output:\n\n```\n%s\n```\n", t.draft.Status, strings.TrimSpace(t.draft.Output))
		}
	}
	fmt.Fprintf(&b, "\n<sub>Requested by astra run `%s`, trace `%s`. The token file in this pull request is what a later run checks; editing it invalidates the approval.</sub>\n",
		r.opts.RunnerID, t.traceID)
	return b.String()
}

func toolSummary(r *Runner, tool *model.Tool) string {
	var parts []string
	switch tool.Kind {
	case model.KindExec:
		parts = append(parts, "runs "+r.opts.Redact.String(strings.Join(tool.Command, " ")))
	case model.KindHTTP:
		parts = append(parts, tool.Method+" "+r.opts.Redact.String(tool.URL))
	default:
		parts = append(parts, tool.Kind)
	}
	if tool.RiskLevel > model.RiskLow {
		parts = append(parts, "risk "+tool.RiskLevel.String())
	}
	if !tool.Idempotent {
		parts = append(parts, "not idempotent")
	}
	return strings.Join(parts, ", ")
}
