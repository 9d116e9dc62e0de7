package runner

import (
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
)

// localWorker is gitops.Repo: what in the checkout astra did not write.
type localWorker interface {
	LocalWork(prefixes []string) (gitops.LocalWork, error)
}

// configFiles are the paths a run's configuration is read from: the
// schedules, the policies, the settings and what the tools run or load.
func (r *Runner) configFiles() []string {
	return append([]string{"schedules", "policies", ".astra.yaml"}, r.toolFiles(nil)...)
}

// refuseLocalWork stops a run that would push before it changes anything
// when the checkout holds work that is not astra's: commits the remote
// lacks without astra's mark (a sync would drop them from the branch, a
// push would publish them unreviewed) or uncommitted changes to the
// configuration (a run reads it from a commit: what it records must be
// what anyone can read back from git). A run that pushes nothing
// (--no-push, no remote) works in the checkout as it is.
func (r *Runner) refuseLocalWork() error {
	lw, ok := r.git.(localWorker)
	if !ok || r.opts.NoPush {
		return nil
	}
	w, err := lw.LocalWork(r.configFiles())
	if err != nil {
		return errkind.Infraf("looking for work in this checkout that astra did not write: %w", err)
	}
	if w.Empty() {
		return nil
	}
	var why []string
	if n := len(w.Commits); n > 0 {
		var list []string
		for _, c := range w.Commits {
			list = append(list, fmt.Sprintf("%.12s %q by %s", c.Commit, c.Subject, c.Author))
		}
		why = append(why, fmt.Sprintf("%s holds %s the remote lacks that astra did not write (%s): a run would publish %s on the remote branch "+
			"unreviewed, or drop %s from %s when the remote has moved", r.git.Branch(), plural(n, "commit"), strings.Join(list, "; "),
			pronoun(n, "it", "them"), pronoun(n, "it", "them"), r.git.Branch()))
	}
	if n := len(w.Files); n > 0 {
		why = append(why, fmt.Sprintf("the configuration has uncommitted changes (%s): a run reads its configuration from a commit", strings.Join(w.Files, ", ")))
	}
	return &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("this checkout holds work astra did not write; nothing ran: %s", strings.Join(why, "; ")),
		Hint: "Push your commits through review first (or move them to another branch: `git branch my-work && git reset --keep @{upstream}`), " +
			"commit or stash configuration edits (`git stash -u`), or run astra from a clean clone of the remote. " +
			"`astra run-due --dry-run` and `astra validate` read the checkout as it is; --no-push records into it without pushing."}
}

func pronoun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
