package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ui"
)

// busy says on a terminal's status line, after a second of work, what
// the command is doing; stop it before printing. Elsewhere it is quiet.
func (a *app) busy(what string) (stop func()) {
	return a.status.Busy(func() string { return what })
}

// runProgress prints a run as it goes, on stderr: its header at once,
// then in a log a line as each task starts and as it ends; on a terminal
// the outcomes, under a status line of what is running.
type runProgress struct {
	w       *ui.Writer
	running []string // on a terminal: schedules whose task runs now
	done    int
}

func (p *runProgress) Begin(command string, now time.Time, dryRun bool) {
	mode := ""
	if dryRun {
		mode = " (dry run)"
	}
	fmt.Fprintf(p.w, "astra %s at %s%s\n", command, now.Format(time.RFC3339), mode)
}

func (p *runProgress) Start(schedule string) {
	if !p.w.Live() {
		fmt.Fprintf(p.w, "astra: started %s\n", schedule)
		return
	}
	p.running = append(p.running, schedule)
	p.status()
}

func (p *runProgress) End(action, schedule, detail string) {
	if i := slices.Index(p.running, schedule); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
	p.done++
	if p.w.Live() {
		p.status() // first, so that the line is not followed by the old one
	}
	fmt.Fprintln(p.w, strings.TrimSpace(fmt.Sprintf("astra: %s %s %s", action, schedule, detail)))
}

// status shows what runs now and how many tasks ended.
func (p *runProgress) status() {
	if len(p.running) == 0 {
		_ = p.w.SetStatus("")
		return
	}
	_ = p.w.SetStatus(fmt.Sprintf("running %s; %d done", strings.Join(p.running, ", "), p.done))
}
