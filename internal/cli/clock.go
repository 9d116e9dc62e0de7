package cli

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/state"
)

// What-if time is explicit. --now is a flag and only a flag: no setting in
// .astra.yaml and no variable of a job's environment moves the clock, and
// a command that records decisions takes --now only with --test-clock, the
// opt-in of tests, whose events then say "clock":"test".

// checkNowFlag checks --now and --test-clock, and refuses ASTRA_NOW, which
// older versions read: ignoring it would let a job believe it still moves
// the clock.
func (a *app) checkNowFlag() error {
	if v := a.getenv("ASTRA_NOW"); v != "" {
		return &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("ASTRA_NOW is set (%q): --now is a flag of what-if runs, never a variable", v),
			Hint: "Unset ASTRA_NOW; pass --now to the command whose answer you want at another time (a run that records refuses it without --test-clock)."}
	}
	if a.nowFlag != "" {
		if _, err := time.Parse(time.RFC3339, a.nowFlag); err != nil {
			return errkind.Usagef("--now %q is not an RFC3339 time such as 2026-11-22T09:00:00Z", a.nowFlag)
		}
	}
	if a.testClock && a.nowFlag == "" {
		return errkind.Usagef("--test-clock without --now: it lets a test run take its time from --now")
	}
	return nil
}

// refuseNowSetting refuses a now: key in the settings file, at its line.
func refuseNowSetting(file string, data []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // viper says what is wrong with it
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; strings.EqualFold(k.Value, "now") {
			return &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("%s:%d:%d: %s: --now is a flag of what-if runs, never a setting", file, k.Line, k.Column, k.Value),
				Hint: "Remove the line: a committed setting would move the clock of every run that records. Pass --now to a what-if command instead."}
		}
	}
	return nil
}

// keyRetention says state.KeyRetention in words, for help texts.
var keyRetention = fmt.Sprintf("%d days", state.KeyRetention/(24*time.Hour))

// now is the time of this invocation, in UTC: --now when given (what-if
// answers, dry runs, and test runs with --test-clock), else the machine's
// clock.
func (a *app) now() time.Time {
	if a.nowFlag != "" {
		t, _ := time.Parse(time.RFC3339, a.nowFlag) // checked in checkNowFlag
		return t.UTC()
	}
	return time.Now().UTC()
}

// recording is asked by every command before it records decisions: --now
// moves such a command's clock only with --test-clock.
func (a *app) recording() error {
	if a.nowFlag == "" || a.testClock {
		return nil
	}
	return &errkind.Error{Kind: errkind.ErrUsage,
		Err: fmt.Errorf("--now %s would date what this command records, and the schedules would wait for that time: a command that records runs on the machine's clock", a.nowFlag),
		Hint: "For a what-if answer add --dry-run (or ask a read command such as `astra schedules next --now ...`); " +
			"a test that records at a fixed time adds --test-clock, and every event it writes then says \"clock\":\"test\"."}
}

// ledgerClock is the clock of an `astra ledger` command that records.
func (a *app) ledgerClock() (ledgerops.Clock, error) {
	if err := a.recording(); err != nil {
		return ledgerops.Clock{}, err
	}
	if err := a.requireSigner(); err != nil {
		return ledgerops.Clock{}, err
	}
	return ledgerops.Clock{Now: a.now, Test: a.testClock}, nil
}

// trustedTime are the times a run that records holds its clock to:
// GitHub's API when GitHub is configured (the Date of its answers), then
// the git remote over http(s) (the Date of its smart-HTTP answer). A
// remote over ssh or a path says no time: the run then goes on, and the
// first such run in a checkout says so (untimed).
func (a *app) trustedTime(fc *forge.Client, git runner.Syncer) (sources []runner.TimeSource, untimed string) {
	if fc != nil {
		sources = append(sources, runner.TimeSource{Name: "GitHub's API", Time: fc.ServerTime})
	}
	repo, ok := git.(*gitops.Repo)
	if !ok || !repo.HasRemote() {
		return sources, "" // nothing this run records leaves the machine
	}
	if repo.IsHTTP() {
		sources = append(sources, runner.TimeSource{Name: "the git remote (" + repo.RemoteDisplay() + ")", Time: repo.ServerTime})
	}
	if len(sources) == 0 && repo.NoteOnce("untimed "+repo.RemoteDisplay()) {
		untimed = "this run's clock cannot be checked: the git remote (" + repo.RemoteDisplay() + ") answers over ssh or from a path, which says no time, " +
			"and no GitHub API is configured (GITHUB_TOKEN, GITHUB_REPOSITORY); a wrong clock would date what runs record (said once per checkout)"
	}
	return sources, untimed
}
