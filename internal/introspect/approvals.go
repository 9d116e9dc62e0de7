package introspect

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Approval is one schedule in `astra approvals list`: its open request,
// or a token file in the checkout, or both.
type Approval struct {
	ScheduleID string    `json:"schedule_id"`
	Name       string    `json:"name"`
	Tier       int       `json:"tier"`
	Slot       time.Time `json:"slot,omitzero"`
	Key        string    `json:"idempotency_key,omitempty"`
	Status     string    `json:"status"`
	By         string    `json:"by,omitempty"`      // who approved it, once approved
	Comment    string    `json:"comment,omitempty"` // what they said
	Draft      string    `json:"draft,omitempty"`   // the L1 dry run's output the approver is asked to approve (Drafts)
	PR         int       `json:"pr,omitempty"`
	URL        string    `json:"url,omitempty"`
	Requested  time.Time `json:"requested_at,omitzero"`
	Expires    time.Time `json:"expires_at,omitzero"`
	Age        string    `json:"age,omitempty"`
	Why        string    `json:"why,omitempty"`
	Token      bool      `json:"token_file"`
	Required   int       `json:"approvals_required,omitempty"` // distinct approvers it needs, when more than one
	Approvers  []string  `json:"approvers,omitempty"`          // who approved it so far, when it needs several
	// Reviewers are the role's members whose review approves its pull
	// request now, as GitHub answered at listing: they count once it is
	// merged, when the merge reads them again.
	Reviewers []string `json:"reviewers,omitempty"`
}

// Progress is how many of the approvers it needs approved it, signers
// and approving reviews ("1/2"), or "" when one is enough.
func (a Approval) Progress() string {
	if a.Required < 2 {
		return ""
	}
	return strconv.Itoa(len(a.Approvers)+len(a.Reviewers)) + "/" + strconv.Itoa(a.Required)
}

// Repository names where pull requests are linked: a server
// (https://github.com) and an owner/repo; empty when unknown.
type Repository struct{ ServerURL, Name string }

// PullURL links pull request pr, or is "" when the repository or the pull
// request is unknown.
func (r Repository) PullURL(pr int) string {
	if r.Name == "" || pr == 0 {
		return ""
	}
	return r.ServerURL + "/" + r.Name + "/pull/" + strconv.Itoa(pr)
}

// Approvals lists the schedules with an open approval request (st) or a
// token file in the checkout at root, in configuration order, with why
// each needs an approval and how long its request has waited at now.
func Approvals(cfg *model.Config, st *state.State, root string, repo Repository, now time.Time) []Approval {
	var out []Approval
	for _, s := range cfg.Schedules {
		_, terr := approval.Read(root, s.ID)
		hasToken := terr == nil
		req := st.Approvals[s.ID]
		if req == nil && !hasToken {
			continue
		}
		a := Approval{ScheduleID: s.ID, Name: s.Name, Tier: int(s.SafetyTier), Token: hasToken, Status: "token file present"}
		if tool := cfg.Policies.Tools[s.TargetTool]; tool != nil {
			a.Why = strings.Join(cfg.Policies.ApprovalReasons(s, tool), "; ")
		}
		if req != nil {
			a.Key, a.Slot, a.Status, a.PR, a.Requested, a.Expires = req.Key, req.Slot, req.Status, req.PR, req.RequestedAt, req.ExpiresAt
			a.By, a.Comment = req.By, req.Comment
			a.Age = max(0, now.Sub(req.RequestedAt)).Round(time.Minute).String()
			a.URL = repo.PullURL(req.PR)
		}
		if need := cfg.Policies.ApprovalsRequired(s); need > 1 {
			a.Required = need
			if req != nil {
				a.Approvers = req.Approvers()
			}
		}
		out = append(out, a)
	}
	return out
}

// DeadLetters are the slots that failed every attempt, oldest first.
func DeadLetters(st *state.State) []*state.DeadLetter {
	out := make([]*state.DeadLetter, 0, len(st.DeadLetters))
	for _, d := range st.DeadLetters {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].Key < out[j].Key
	})
	return out
}
