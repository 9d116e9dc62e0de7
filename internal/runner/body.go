package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/model"
)

// approvalBody is the pull request text: in plain words, what will run,
// with which payload and event (secrets redacted), as whom, why it needs a
// human, who may approve, and what a dry run showed.
func approvalBody(r *Runner, rq *request) string {
	sc, tool := rq.sched, rq.tool
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
	row("Slot", rq.slot.UTC().Format(time.RFC3339)+" ("+rq.mode+")")
	row("Idempotency key", "`"+rq.key+"`")
	row("Expires", rq.expires.UTC().Format(time.RFC3339)+" (after that the request is closed and the next slot asks again)")
	row("Who may approve", whoMayApprove(r.cfg, sc))
	b.WriteString("\n**Why approval is needed**\n\n")
	for _, reason := range rq.reasons {
		fmt.Fprintf(&b, "- %s\n", reason)
	}
	payload, _ := json.MarshalIndent(r.opts.Redact.Payload(sc.Payload), "", "  ")
	fmt.Fprintf(&b, "\n**Payload** (secrets redacted)\n\n```json\n%s\n```\n", payload)
	if len(rq.event) > 0 {
		var ev bytes.Buffer
		if json.Indent(&ev, rq.event, "", "  ") != nil {
			ev.Write(rq.event)
		}
		fmt.Fprintf(&b, "\n**Event** (the tool receives exactly this as `ASTRA_EVENT`)\n\n```json\n%s\n```\n", ev.String())
	}
	if d := rq.draft; d != nil {
		b.WriteString("\n**Dry run (L1 Draft)**\n\n")
		switch {
		case d.WouldRun != "":
			fmt.Fprintf(&b, "The tool cannot dry-run; it would run:\n\n```\n%s\n```\n", d.WouldRun)
		default:
			fmt.Fprintf(&b, "Status `%s`. Output:\n\n```\n%s\n```\n", d.Status, strings.TrimSpace(d.Output))
		}
	}
	fmt.Fprintf(&b, "\n<sub>Requested by astra run `%s`, trace `%s`. The token file in this pull request binds this slot, payload and schedule definition; "+
		"astra recorded its exact hash, so an edited token approves nothing. Only a merge by someone allowed to approve counts.</sub>\n", r.opts.RunnerID, rq.traceID)
	return b.String()
}

// whoMayApprove lists the roles that may approve sc and their members.
func whoMayApprove(cfg *model.Config, sc *model.Schedule) string {
	roles := cfg.Policies.RolesFor(model.VerbApprove, approverRole(cfg, sc))
	if len(roles) == 0 {
		return "nobody: no role may approve (fix policies/)"
	}
	parts := make([]string, len(roles))
	for i, role := range roles {
		parts[i] = fmt.Sprintf("role `%s`: %s", role, strings.Join(cfg.Policies.Roles[role], ", "))
	}
	return strings.Join(parts, "; ")
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
