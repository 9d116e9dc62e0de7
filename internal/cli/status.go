package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/introspect"
)

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the last cron tick, pending approvals, dead letters and any pause",
		Long: `status is the first thing to look at: when run-due last recorded a tick
(when, how long ago, what it came to), how many approvals are pending,
how many dead letters wait for a person, and whether the global budget is
paused. It reads the state snapshot and the events after it, not the month.

A tick is recorded with whatever else a run recorded, and at least once an
hour when nothing happens: a last tick older than 90 minutes is called out,
since the cron may have stopped. For an alert when it stops, configure a
heartbeat (heartbeat.url_env) with an outside monitor.`,
		Example: `  astra status
  astra status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runStatus(cmd.Context()) },
	}
}

// runStatus is `astra status`.
func (a *app) runStatus(_ context.Context) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	st, err := a.replay()
	if err != nil {
		return err
	}
	s := introspect.StatusOf(cfg, st)
	if a.json() {
		return a.printJSON(s)
	}
	printStatus(a.stdout, s)
	return nil
}

func printStatus(w io.Writer, s introspect.Status) {
	if t := s.LastTick; t != nil {
		fmt.Fprintf(w, "last tick:         %s (%s), %s: ran %d, failed %d, skipped %d, awaiting approval %d\n",
			t.At.UTC().Format(time.RFC3339), s.TickAgo, t.Status, t.Ran, t.Failed, t.Skipped, t.AwaitingApproval)
		if s.Stale {
			fmt.Fprintln(w, "                   no tick recorded for over 90 minutes: is the cron workflow running?")
		}
	} else {
		fmt.Fprintln(w, "last tick:         none recorded (astra run-due records one)")
	}
	fmt.Fprintf(w, "pending approvals: %d\n", s.Approvals)
	fmt.Fprintf(w, "dead letters:      %d\n", s.DeadLetters)
	paused := "no"
	if s.Paused != "" {
		paused = s.Paused + " (`astra budget resume` lifts it)"
	}
	fmt.Fprintf(w, "budget paused:     %s\n", paused)
	if p := s.Stopped; p != nil {
		fmt.Fprintf(w, "PAUSED:            by %s at %s: %s; nothing starts until `astra resume --all`\n", p.By, p.At.UTC().Format(time.RFC3339), p.Reason)
	}
}
