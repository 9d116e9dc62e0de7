package githubtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"
)

// review is a pull request review. A review without an event is PENDING
// until submitted: only its author sees it, and GitHub keeps one per user
// and pull request.
type review struct {
	id       int64
	user     string
	body     string
	state    string // APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
	commitID string
	at       time.Time // submitted; zero while PENDING
}

// reviewStates maps a review's event to the state it leaves.
var reviewStates = map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING"}

// reviewDismissal mirrors the body GitHub describes (go-github's
// PullRequestReviewDismissalRequest lacks event).
type reviewDismissal struct {
	Message *string `json:"message,omitempty"`
	Event   *string `json:"event,omitempty"`
}

// unprocessableSimple is GitHub's 422 with plain-text errors
// (validation-error-simple), what the review operations answer.
func unprocessableSimple(w http.ResponseWriter, doc string, errs ...string) {
	writeJSON(w, http.StatusUnprocessableEntity, struct {
		Message          string   `json:"message"`
		Errors           []string `json:"errors"`
		DocumentationURL string   `json:"documentation_url"`
		Status           string   `json:"status"`
	}{"Unprocessable Entity", errs, doc, "422"})
}

const (
	createReviewDoc  = "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"
	dismissReviewDoc = "https://docs.github.com/rest/pulls/reviews#dismiss-a-review-for-a-pull-request"
)

func (s *Server) reviewJSON(is *issue, r *review) jsonObj {
	html := fmt.Sprintf("%s#pullrequestreview-%d", s.issueHTML(is), r.id)
	pull := fmt.Sprintf("%s/pulls/%d", s.repoAPI(), is.number)
	o := jsonObj{
		"id":                 r.id,
		"node_id":            nodeID("PRR", r.id),
		"user":               s.userJSON(r.user),
		"body":               r.body,
		"state":              r.state,
		"html_url":           html,
		"pull_request_url":   pull,
		"author_association": s.association(r.user),
		"_links":             jsonObj{"html": jsonObj{"href": html}, "pull_request": jsonObj{"href": pull}},
		"commit_id":          r.commitID,
	}
	if !r.at.IsZero() {
		o["submitted_at"] = timeJSON(r.at)
	}
	return o
}

// listReviews lists the reviews in the order they were made; a pending
// review only to its author.
func (s *Server) listReviews(c *call, is *issue) {
	var visible []*review
	for _, r := range is.pull.reviews {
		if r.state != "PENDING" || strings.EqualFold(r.user, c.login) {
			visible = append(visible, r)
		}
	}
	list := []jsonObj{}
	for _, r := range paginate(s, c, visible) {
		list = append(list, s.reviewJSON(is, r))
	}
	writeJSON(c.w, http.StatusOK, list)
}

// createReview is GitHub's "create a review for a pull request" as the
// caller, without review comments. As there, an author may only comment
// on their own pull request, and requesting changes or commenting needs a
// body.
func (s *Server) createReview(c *call, is *issue) {
	var req github.PullRequestReviewRequest
	if !decode(c, &req) {
		return
	}
	state, ok := reviewStates[req.GetEvent()]
	switch {
	case !ok:
		writeError(c.w, http.StatusUnprocessableEntity, "Invalid request.\n\nFor 'properties/event', "+strconv.Quote(req.GetEvent())+" is not a member of enum.", createReviewDoc)
		return
	case len(req.Comments) > 0 || req.NodeID != nil:
		writeError(c.w, http.StatusUnprocessableEntity, "githubtest: review comments are not served", "")
		return
	}
	author := strings.EqualFold(c.login, is.user)
	switch {
	case author && state == "APPROVED":
		unprocessableSimple(c.w, createReviewDoc, "Can not approve your own pull request")
		return
	case author && state == "CHANGES_REQUESTED":
		unprocessableSimple(c.w, createReviewDoc, "Can not request changes on your own pull request")
		return
	case req.GetBody() == "" && (state == "CHANGES_REQUESTED" || state == "COMMENTED"):
		unprocessableSimple(c.w, createReviewDoc, "Review body can't be blank")
		return
	case utf8.RuneCountInString(req.GetBody()) > maxBody:
		unprocessableSimple(c.w, createReviewDoc, "Body is too long (maximum is 65536 characters)")
		return
	}
	for _, r := range is.pull.reviews {
		if r.state == "PENDING" && strings.EqualFold(r.user, c.login) {
			unprocessableSimple(c.w, createReviewDoc, "User can only have one pending review per pull request")
			return
		}
	}
	commit := req.GetCommitID()
	if commit == "" {
		commit = is.pull.headSHA
		if h, _ := branchTip(c.repo, is.pull.head); is.state == "open" && !h.IsZero() {
			commit = h.String()
		}
	}
	r := &review{id: s.newID(), user: c.login, body: req.GetBody(), state: state, commitID: commit}
	if state != "PENDING" {
		r.at = s.clock()
		is.updatedAt = r.at
	}
	is.pull.reviews = append(is.pull.reviews, r)
	writeJSON(c.w, http.StatusOK, s.reviewJSON(is, r))
}

// dismissReview dismisses an approval or a request for changes; GitHub
// dismisses no other review.
func (s *Server) dismissReview(c *call, is *issue, id string) {
	var r *review
	for _, x := range is.pull.reviews {
		if strconv.FormatInt(x.id, 10) == id && (x.state != "PENDING" || strings.EqualFold(x.user, c.login)) {
			r = x
		}
	}
	if r == nil {
		notFound(c.w)
		return
	}
	var req reviewDismissal
	if !decode(c, &req) {
		return
	}
	switch {
	case req.Message == nil:
		writeError(c.w, http.StatusUnprocessableEntity, "Invalid request.\n\n\"message\" wasn't supplied.", dismissReviewDoc)
		return
	case req.Event != nil && *req.Event != "DISMISS":
		writeError(c.w, http.StatusUnprocessableEntity, "Invalid request.\n\nFor 'properties/event', \""+*req.Event+"\" is not a member of enum.", dismissReviewDoc)
		return
	case r.state != "APPROVED" && r.state != "CHANGES_REQUESTED":
		unprocessableSimple(c.w, dismissReviewDoc, "Can not dismiss a "+strings.ToLower(strings.ReplaceAll(r.state, "_", " "))+" pull request review")
		return
	}
	r.state = "DISMISSED"
	is.updatedAt = s.clock()
	writeJSON(c.w, http.StatusOK, s.reviewJSON(is, r))
}
