package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// Ways FuzzLoad places the schedule file; link%linkKinds picks one.
const (
	linkNone    = iota // schedules/s.yaml holds the bytes
	linkOutside        // schedules/s.yaml is a symlink to a file outside holding them
	linkDevZero        // schedules/s.yaml is a symlink to /dev/zero
	linkDir            // schedules/ is a symlink to a directory outside
	linkFIFO           // schedules/s.yaml is a named pipe
	linkKinds
)

// placeSchedules puts the schedule file's bytes at schedules/s.yaml of
// root the way link says (outside: a directory outside the repository).
func placeSchedules(t *testing.T, root, outside string, sched []byte, link uint8) {
	t.Helper()
	file := filepath.Join(root, "schedules/s.yaml")
	switch link {
	case linkNone:
		write(t, file, sched)
	case linkOutside:
		write(t, filepath.Join(outside, "s.yaml"), sched)
		mkdir(t, filepath.Dir(file))
		must(t, os.Symlink(filepath.Join(outside, "s.yaml"), file))
	case linkDevZero:
		mkdir(t, filepath.Dir(file))
		must(t, os.Symlink("/dev/zero", file))
	case linkDir:
		write(t, filepath.Join(outside, "s.yaml"), sched)
		must(t, os.Symlink(outside, filepath.Join(root, "schedules")))
	case linkFIFO:
		mkdir(t, filepath.Dir(file))
		if err := mkfifo(file); err != nil {
			t.Skip("no named pipes here")
		}
	}
}

// FuzzLoad feeds the whole loader a schedule file and a policies file.
// Whatever they hold: Load never panics and never fails with an I/O error,
// every error names its file, nothing outside the repository is read, and
// a configuration that validates plans a bounded run a month later.
// The seed corpus in testdata/fuzz/FuzzLoad holds the hostile cases
// (see README "Limits"); `go test` runs it as a regular test.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("name: a\ncron: \"@every 15m\"\ntarget_tool: noop\n"), []byte(policies), uint8(linkNone))
	f.Fuzz(func(t *testing.T, sched, pol []byte, link uint8) {
		root, outside := t.TempDir(), t.TempDir()
		write(t, filepath.Join(root, "policies/p.yaml"), pol)
		placeSchedules(t, root, outside, sched, link%linkKinds)
		cfg, diags, err := config.Load(root)
		if err != nil {
			t.Fatalf("Load failed instead of reporting: %v", err)
		}
		for _, d := range diags {
			if d.Severity == diag.Error && d.Pos.File == "" {
				t.Errorf("an error names no file: %s", d)
			}
			if strings.Contains(d.Msg+d.Hint, outside) {
				t.Errorf("a message names a path outside the repository: %s", d)
			}
		}
		if link%linkKinds != linkNone {
			refused := 0
			for _, d := range diags {
				if d.Pos.File == "schedules/s.yaml" || d.Pos.File == "schedules" {
					if d.Pos.Line != 0 {
						t.Errorf("content from outside the repository was read: %s", d)
					}
					refused++
				}
			}
			if refused != 1 || len(cfg.Schedules) != 0 {
				t.Errorf("want one refusal and no schedules, got %d schedules:\n%v", len(cfg.Schedules), diag.ListError(diags))
			}
		}
		if diags.Errors() == 0 {
			checkBounded(t, cfg)
		}
	})
}

// checkBounded: a month after every schedule was first seen, each
// schedule adds at most MaxSlotsPerSchedule slots to the plan.
func checkBounded(t *testing.T, cfg *model.Config) {
	t.Helper()
	if len(cfg.Schedules) > model.MaxSchedules {
		t.Fatalf("%d schedules validated", len(cfg.Schedules))
	}
	created := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now := created.AddDate(0, 1, 0)
	st := state.New(created)
	for _, s := range cfg.Schedules {
		st.Apply(&ledger.Event{Event: ledger.ScheduleCreated, ScheduleID: s.ID, TS: created})
	}
	perSchedule := map[string]int{}
	due := plan.Due(cfg, st, now, plan.Filter{})
	for _, c := range due {
		perSchedule[c.Schedule.ID]++
	}
	for id, n := range perSchedule {
		if n > model.MaxSlotsPerSchedule {
			t.Errorf("%s: %d slots in one run", id, n)
		}
	}
	if len(due) > model.MaxCandidatesPerRun {
		t.Errorf("%d candidates", len(due))
	}
}

const policies = `tools:
  noop: {kind: exec, command: [echo, ok], tier: read_only}
actors:
  - {actor: astra, scopes: ["*"]}
`

func write(t *testing.T, p string, data []byte) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	must(t, os.WriteFile(p, data, 0o644))
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
