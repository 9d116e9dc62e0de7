package gitops

import (
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"

	"github.com/astra-gitops/astra/internal/errkind"
)

// ErrProtected: the remote refuses direct pushes to the branch (branch
// protection or a ruleset). Retrying cannot help; nothing was changed.
var ErrProtected = errkind.Usage(errors.New("the branch is protected"))

// maxRemoteText bounds what a push keeps of the remote's messages.
const maxRemoteText = 16 << 10

// remoteText collects what the remote prints during a push ("remote:
// ..." lines, which carry a hook's or GitHub's reason for a refusal),
// up to maxRemoteText bytes.
type remoteText struct{ b []byte }

func (t *remoteText) Write(p []byte) (int, error) {
	if room := maxRemoteText - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// listen asks the remote to send its messages on a side band, as git push
// does, so that a refusal's reason reaches t instead of being lost.
func (t *remoteText) listen(req *packp.ReferenceUpdateRequest, adv *capability.List) {
	switch {
	case adv.Supports(capability.Sideband64k):
		_ = req.Capabilities.Set(capability.Sideband64k)
	case adv.Supports(capability.Sideband):
		_ = req.Capabilities.Set(capability.Sideband)
	default:
		return
	}
	if adv.Supports(capability.Quiet) {
		_ = req.Capabilities.Set(capability.Quiet) // no progress meters, only messages
	}
	req.Progress = t
}

// reasons are the remote's message lines worth quoting: errors and
// refusals, not progress.
func (t *remoteText) reasons() []string {
	var out []string
	for _, l := range strings.FieldsFunc(string(t.b), func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "remote:"))
		low := strings.ToLower(l)
		if l != "" && len(out) < 4 && (strings.Contains(low, "error") || strings.Contains(low, "protected") || strings.Contains(low, "declined") || strings.Contains(low, "rule")) {
			out = append(out, l)
		}
	}
	return out
}

// quote is the reasons as a suffix for an error message.
func (t *remoteText) quote() string {
	if r := t.reasons(); len(r) > 0 {
		return " (the remote says: " + strings.Join(r, " ") + ")"
	}
	return ""
}

// isProtected recognises a ref update refused by branch protection: GitHub
// answers "protected branch hook declined" and explains in GH006 (branch
// protection) or GH013 (rulesets); GitLab says "protected branch" too.
func isProtected(status string, t *remoteText) bool {
	s := strings.ToLower(status + "\n" + string(t.b))
	for _, m := range []string{"protected branch", "gh006", "gh013", "repository rule violations"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
