package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/astra-gitops/astra/internal/diag"
)

// checkDirs names a missing schedules/ or policies/ directory once, for a
// new user or a wrong --repo. It reports whether policies/ gave any file:
// without one, every schedule's tool and actor are unknown, and validate
// leaves that cascade to this one message.
func checkDirs(root string, schedFiles, polFiles []string, schedules int, diags *diag.List) (policies bool) {
	const hint = "run `astra init` to create it, or pass --repo"
	if len(schedFiles) == 0 && !exists(root, SchedulesDir) {
		diags.Warnf(diag.Pos{}, hint, "no %s/ directory in %s: nothing will ever be due", SchedulesDir, root)
	}
	if len(polFiles) > 0 {
		return true
	}
	report := diags.Warnf
	if schedules > 0 {
		report = diags.Errorf // the schedules refer to tools and actors that are not there
	}
	if exists(root, PoliciesDir) {
		report(diag.Pos{}, "add the tool catalog and actors as policies/*.yaml; `astra init` writes examples",
			"no policy files in %s/: astra needs the tool catalog and actors there", PoliciesDir)
	} else {
		report(diag.Pos{}, hint, "no %s/ directory in %s: astra needs the tool catalog and actors there", PoliciesDir, root)
	}
	return false
}

func exists(root, dir string) bool {
	_, err := os.Stat(filepath.Join(root, dir))
	return !errors.Is(err, fs.ErrNotExist)
}

// IsProject reports whether root holds an astra project: a schedules/ or
// a policies/ directory. Without either, commands that act on the
// configuration have nothing to act on, and say so instead of succeeding.
func IsProject(root string) bool {
	return exists(root, SchedulesDir) || exists(root, PoliciesDir)
}
