package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/markdown"
	"github.com/astra-gitops/astra/internal/model"
)

// approvalBody is the pull request text: in plain words, what will run,
// with which payload and event (secrets redacted), as whom, why it needs a
// human, who may approve, and what a dry run showed. What astra did not
// write itself (names, the description, reasons, commands, payload, the
// draft's output) goes through package markdown: it shows as written and
// cannot add a heading, a link, an image or a mention to the request.
func approvalBody(r *Runner, rq *request) string {
	sc, tool := rq.sched, rq.tool
	var b strings.Builder
	if rq.rollback {
		fmt.Fprintf(&b, "astra wants to run the **rollback** of %s's run %s (the tool's compensating command) and needs a human decision.\n\n",
			markdown.Code(sc.Name), markdown.Code(strings.TrimSuffix(rq.key, rollbackSuffix)))
	} else {
		fmt.Fprintf(&b, "astra wants to run **%s** and needs a human decision.\n\n", markdown.Code(sc.Name))
	}
	if sc.Description != "" {
		fmt.Fprintf(&b, "> %s\n\n", markdown.Text(r.opts.Redact.String(sc.Description)))
	}
	if need := r.cfg.Policies.ApprovalsRequired(sc); need > 1 {
		fmt.Fprintf(&b, "**This run needs %d distinct approvers: %d of you approve this pull request with a review (Files changed → Review changes → Approve), "+
			"then another one merges it. Close it to reject.** A review counts while it approves the pull request's current head; "+
			"approvals signed with `astra approve` count too.\n\n", need, need-1)
	} else {
		b.WriteString("**Merge this pull request to approve one run. Close it to reject.**\n\n")
	}
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, strings.ReplaceAll(v, "|", "\\|")) }
	row("Schedule", fmt.Sprintf("%s (%s)", markdown.Code(sc.Name), markdown.Code(sc.ID)))
	if sc.Tenant != "" {
		row("Tenant", markdown.Code(sc.Tenant))
	}
	row("Tool", fmt.Sprintf("%s (%s)", markdown.Code(tool.Name), markdown.Text(toolSummary(r, tool))))
	row("Actor", fmt.Sprintf("%s, autonomy %s", markdown.Code(sc.Actor), sc.Autonomy))
	row("Safety tier", fmt.Sprintf("%d (%s)", sc.SafetyTier, sc.SafetyTier))
	row("Slot", rq.slot.UTC().Format(time.RFC3339)+" ("+rq.mode+")")
	row("Idempotency key", markdown.Code(rq.key))
	row("Expires", rq.expires.UTC().Format(time.RFC3339)+" (after that the request is closed and the next slot asks again)")
	row("Who may approve", whoMayApprove(r.cfg, sc))
	b.WriteString("\n**Why approval is needed**\n\n")
	for _, reason := range rq.reasons {
		fmt.Fprintf(&b, "- %s\n", markdown.Text(reason))
	}
	payload, _ := json.MarshalIndent(r.opts.Redact.Payload(sc.Payload), "", "  ")
	fmt.Fprintf(&b, "\n**Payload** (secrets redacted)\n\n%s", markdown.Fence("json", string(payload)))
	if len(rq.event) > 0 {
		var ev bytes.Buffer
		if json.Indent(&ev, rq.event, "", "  ") != nil {
			ev.Write(rq.event)
		}
		fmt.Fprintf(&b, "\n**Event** (the tool receives exactly this as `ASTRA_EVENT`)\n\n%s", markdown.Fence("json", ev.String()))
	}
	actionSection(&b, r, rq)
	if d := rq.draft; d != nil {
		b.WriteString("\n**Dry run (L1 Draft)**\n\n")
		switch {
		case d.WouldRun != "":
			fmt.Fprintf(&b, "The tool cannot dry-run; it would run:\n\n%s", markdown.Fence("", d.WouldRun))
		default:
			fmt.Fprintf(&b, "Status %s. Output:\n\n%s", markdown.Code(string(d.Status)), markdown.Fence("", strings.TrimSpace(d.Output)))
		}
	}
	fmt.Fprintf(&b, "\n<sub>Requested by astra run %s, trace `%s`. The token file in this pull request binds this run and the action above; "+
		"astra recorded its exact hash and this pull request's head commit, so an edited token or an extra commit approves nothing. "+
		"Only a merge by someone allowed to approve counts, and astra checks it again, with the action, right before the run.</sub>\n",
		markdown.Code(r.opts.RunnerID), rq.traceID)
	return b.String()
}

// actionSection says in plain words what the approval binds: any change to
// one of these before the run refuses the approval.
func actionSection(b *strings.Builder, r *Runner, rq *request) {
	a, sc, tool := rq.action, rq.sched, rq.tool
	b.WriteString("\n**What this approval binds** (if any of it changes before the run, the approval is refused)\n\n")
	argv := tool.Command
	what := "runs"
	if rq.rollback {
		argv, what = tool.Rollback, "rolls back with"
	}
	switch tool.Kind {
	case model.KindExec:
		fmt.Fprintf(b, "- Tool %s (%s) %s %s; its whole entry in policies\n", markdown.Code(tool.Name), tool.Kind, what,
			markdown.Code(r.opts.Redact.String(strings.Join(argv, " "))))
	case model.KindHTTP:
		fmt.Fprintf(b, "- Tool %s (%s): %s %s; its whole entry in policies\n", markdown.Code(tool.Name), tool.Kind, markdown.Text(orPOST(tool.Method)),
			markdown.Code(r.opts.Redact.String(tool.URL)))
	default:
		fmt.Fprintf(b, "- Tool %s (%s); its whole entry in policies\n", markdown.Code(tool.Name), tool.Kind)
	}
	if len(a.Files) == 0 {
		b.WriteString("- Files: the tool runs no file of this repository\n")
	}
	paths := make([]string, 0, len(a.Files))
	for p := range a.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(b, "- File %s, blob `%s` (%s)\n", markdown.Code(p), a.Files[p], markdown.Code("git rev-parse HEAD:"+p))
	}
	fmt.Fprintf(b, "- Payload and event (above), `%s`\n", a.Components[approval.CompPayload])
	scopes := "none"
	if actor := r.cfg.Policies.Actor(sc.Actor); actor != nil && len(actor.Scopes) > 0 {
		scopes = strings.Join(actor.Scopes, ", ")
	}
	fmt.Fprintf(b, "- Actor %s, scopes %s, autonomy %s\n", markdown.Code(sc.Actor), markdown.Text(scopes), sc.Autonomy.Short())
	fmt.Fprintf(b, "- Schedule definition `%s`\n", a.Components[approval.CompSchedule])
	fmt.Fprintf(b, "- astra %s\n", a.Version)
	fmt.Fprintf(b, "\nAction `%s`.\n", a.Hash)
}

func orPOST(method string) string {
	if method == "" {
		return "POST"
	}
	return method
}

// whoMayApprove lists the roles that may approve sc and their members.
func whoMayApprove(cfg *model.Config, sc *model.Schedule) string {
	roles := cfg.Policies.RolesFor(model.VerbApprove, approverRole(cfg, sc))
	if len(roles) == 0 {
		return "nobody: no role may approve (fix policies/)"
	}
	parts := make([]string, len(roles))
	for i, role := range roles {
		parts[i] = fmt.Sprintf("role %s: %s", markdown.Code(role), markdown.Text(strings.Join(cfg.Policies.Roles[role], ", ")))
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
