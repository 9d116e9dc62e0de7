// Package githubtest is a fake GitHub REST API for tests, backed by a real
// bare git repository.
//
// It implements exactly the endpoints astra's forge client uses (Operations),
// with GitHub's request and response shapes: answers carry every property
// GitHub's published OpenAPI description requires, which a test checks
// against testdata/openapi.json, and requests are decoded strictly into
// go-github types or exact mirrors of its unexported request structs. The
// repository's branches are the source of
// truth: writing a file through the contents API makes a real commit, and
// merging a pull request makes a real merge commit on the base branch, so a
// test can clone RepoDir() over file:// and see what a merge produced.
//
// Tokens map to logins (AddUser); a "human" approves or rejects by calling
// the API with their own token (Merge, Close), never through a shortcut.
// FailNext injects faults (5xx, primary and secondary rate limits) and every
// request is recorded (Requests) with a hash of its token, never the token.
//
// Known differences from GitHub are listed on Server.
package githubtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v60/github"
)

// BotLogin is the login the bot token (Server.BotToken) authenticates as,
// like the GITHUB_TOKEN of a GitHub Actions run.
const BotLogin = "github-actions[bot]"

// Config sets up a Server. The zero value is usable.
type Config struct {
	Repository    string            // "owner/repo"; default "octo/widgets"
	DefaultBranch string            // default "main"
	Files         map[string]string // content of the initial commit; default a README.md
	Now           func() time.Time  // clock for timestamps; default time.Now
}

// Server is a fake GitHub API for one repository.
//
// Differences from GitHub that tests should know about:
//   - mergeability is computed synchronously at file granularity (a file
//     changed differently on both sides is a conflict, even when git could
//     merge the lines); GitHub computes it asynchronously and line-wise;
//   - merge_method "rebase" only fast-forwards (405 when the base moved);
//   - no forks, no drafts semantics, no webhooks, no workflow runs;
//     repository_dispatch is only recorded (Dispatches);
//   - rulesets, classic branch protection, environments, secrets and the
//     default workflow permissions are state tests set (settings.go) and
//     the API reads; nothing enforces them on pushes or merges;
//   - one permission bit per user (write or read-only, SetWrite), an
//     administrator bit (SetAdmin) and, for bots, actions: read
//     (SetActionsRead), instead of GitHub's fine-grained token permissions;
//   - team memberships are visible to every authenticated user;
//   - what the fake does not model is always "none": no milestones,
//     assignees, reviewers, reactions, descriptions or license; links point
//     at the fake, and a repository's clone_url is the bare repository's
//     file:// URL;
//   - reviews carry no review comments, and a push dismisses none (no
//     stale-review dismissal);
//   - the contents API answers a symlink with the link itself; GitHub
//     follows a link to a file in the repository.
type Server struct {
	// URL is the API root, to use as GITHUB_API_URL.
	URL string
	// BotToken authenticates as BotLogin with write permission.
	BotToken string

	owner, name   string
	defaultBranch string
	dir           string
	hs            *httptest.Server
	now           func() time.Time
	skew          time.Duration // SkewDate: how far the Date header is from now
	created       time.Time

	mu         sync.Mutex
	tokens     map[string]string   // token -> login
	accounts   map[string]*account // lower(login) -> account
	readOnly   map[string]bool     // lower(login) -> true when read-only
	issues     map[int]*issue
	nextNumber int
	nextID     int64
	labels     map[string]*label // lower(name) -> label
	teams      map[string]*team  // lower(org/slug) -> team
	faults     []Fault
	requests   []Request
	dispatches []Dispatch
	rateUsed   int
	set        *settings // settings.go; created on first use
}

// Request is one recorded API request. The token is never stored: TokenHash
// is the first 12 hex digits of its SHA-256, enough to tell tokens apart.
type Request struct {
	Method    string
	Path      string
	Query     string
	Login     string // authenticated login; "" when the token was missing or unknown
	TokenHash string
	Body      []byte
	Status    int
}

// Fault is a canned failure for the next request that matches it.
type Fault struct {
	Method  string            // "" matches any method
	Path    string            // path.Match pattern on the URL path, e.g. "/repos/o/r/pulls/*"
	Status  int               // HTTP status to answer with
	Header  map[string]string // extra response headers, e.g. Retry-After
	Message string            // JSON "message"; default chosen from Status and Header
}

// Dispatch is one recorded repository_dispatch.
type Dispatch struct {
	EventType string
	Payload   json.RawMessage
	Login     string
}

// account is a user, bot or organization.
type account struct {
	login string
	id    int64
	typ   string // User, Bot or Organization
}

type team struct {
	id      int64
	created time.Time
	members map[string]string // lower(login) -> active | pending
}

type label struct {
	id          int64
	name, color string
}

type issue struct {
	number    int
	id        int64
	title     string
	body      string
	user      string
	state     string // open | closed
	labels    []string
	createdAt time.Time
	updatedAt time.Time
	closedAt  time.Time
	comments  []*comment
	events    []*event
	pull      *pull // nil for a plain issue
}

type comment struct {
	id   int64
	body string
	user string
	at   time.Time
}

type event struct {
	id     int64
	actor  string
	event  string // labeled, closed, reopened, merged
	commit string // merged: the merge commit
	label  string // labeled: the label's name
	at     time.Time
}

type pull struct {
	head, base     string     // branch names
	headSHA        string     // frozen once closed
	baseSHA        string     // the base's tip when it was closed or merged
	stats          *diffStats // frozen once closed
	merged         bool
	mergedBy       string
	mergedAt       time.Time
	mergeCommitSHA string
	draft          bool
	maintainerMod  bool
	reviewers      []string  // logins whose review was requested
	teamReviewers  []string  // team slugs (of the repository's owner) whose review was requested
	reviews        []*review // in the order they were made
}

// New starts a fake GitHub for cfg.Repository backed by a fresh bare
// repository (go-git PlainInit(dir, true)) with one initial commit on the
// default branch. It is shut down when the test ends.
func New(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Repository == "" {
		cfg.Repository = "octo/widgets"
	}
	owner, name, ok := strings.Cut(cfg.Repository, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		t.Fatalf("githubtest: Repository %q is not owner/repo", cfg.Repository)
	}
	if cfg.DefaultBranch == "" {
		cfg.DefaultBranch = "main"
	}
	if cfg.Files == nil {
		cfg.Files = map[string]string{"README.md": "# " + name + "\n"}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{
		owner:         owner,
		name:          name,
		defaultBranch: cfg.DefaultBranch,
		dir:           t.TempDir(),
		now:           cfg.Now,
		tokens:        map[string]string{},
		accounts:      map[string]*account{},
		readOnly:      map[string]bool{},
		issues:        map[int]*issue{},
		nextNumber:    1,
		labels:        map[string]*label{},
		teams:         map[string]*team{},
	}
	s.created = s.clock()
	s.account(owner).typ = "Organization"
	if err := s.initRepo(cfg.Files); err != nil {
		t.Fatalf("githubtest: init repository: %v", err)
	}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.hs.URL
	t.Cleanup(s.hs.Close)
	s.BotToken = "ghs_" + randomHex(18)
	s.AddUser(s.BotToken, BotLogin)
	return s
}

func (s *Server) initRepo(initial map[string]string) error {
	repo, err := git.PlainInit(s.dir, true)
	if err != nil {
		return err
	}
	head := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(s.defaultBranch))
	if err := repo.Storer.SetReference(head); err != nil {
		return err
	}
	changes := map[string][]byte{}
	for p, c := range initial {
		changes[p] = []byte(c)
	}
	who := signature(s.owner, s.clock())
	h, err := commitFiles(repo, plumbing.ZeroHash, changes, "Initial commit", who, who)
	if err != nil {
		return err
	}
	return setBranch(repo, s.defaultBranch, h, plumbing.ZeroHash)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// RepoDir is the path of the bare repository; clone it with file://.
func (s *Server) RepoDir() string { return s.dir }

// Repository is "owner/repo".
func (s *Server) Repository() string { return s.owner + "/" + s.name }

// DefaultBranch is the repository's default branch.
func (s *Server) DefaultBranch() string { return s.defaultBranch }

// AddUser registers a token for login, with write permission.
func (s *Server) AddUser(token, login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = s.account(login).login
}

// account returns the account of login, creating it on first use (the
// repository's owner, logins that only appear in team memberships).
func (s *Server) account(login string) *account {
	key := strings.ToLower(login)
	a := s.accounts[key]
	if a == nil {
		a = &account{login: login, id: s.newID(), typ: "User"}
		if strings.HasSuffix(login, "[bot]") {
			a.typ = "Bot"
		}
		s.accounts[key] = a
	}
	return a
}

// SetWrite grants or revokes write permission on the repository for login.
// A read-only user may read and comment; anything else answers 403.
func (s *Server) SetWrite(login string, write bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly[strings.ToLower(login)] = !write
}

// RequestedReviewers are the logins and the team slugs whose review was
// requested on pull request number.
func (s *Server) RequestedReviewers(number int) (users, teams []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[number]; is != nil && is.pull != nil {
		return slices.Clone(is.pull.reviewers), slices.Clone(is.pull.teamReviewers)
	}
	return nil, nil
}

// AddTeamMember makes login an active member of the team org/slug (creating
// the team).
func (s *Server) AddTeamMember(org, slug, login string) { s.setTeamMember(org, slug, login, "active") }

// AddPendingTeamMember records an invitation that was not accepted yet.
func (s *Server) AddPendingTeamMember(org, slug, login string) {
	s.setTeamMember(org, slug, login, "pending")
}

// AddTeam creates an empty team.
func (s *Server) AddTeam(org, slug string) { s.setTeamMember(org, slug, "", "") }

func (s *Server) setTeamMember(org, slug, login, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(org + "/" + slug)
	if s.teams[key] == nil {
		s.account(org).typ = "Organization"
		s.teams[key] = &team{id: s.newID(), created: s.clock(), members: map[string]string{}}
	}
	if login != "" {
		s.teams[key].members[strings.ToLower(login)] = state
	}
}

// FailNext makes the next request matching method ("" = any) and pathPattern
// (path.Match syntax, "*" stops at "/") answer status with headers instead
// of being served. Queued faults are consumed in order, one per request,
// before authentication (the faulted request is recorded with its status).
//
//	srv.FailNext("GET", "/repos/o/r/pulls/*", 502, nil)
//	srv.FailNext("", "*", 403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000000"})
//	srv.FailNext("POST", "/repos/o/r/pulls", 403, map[string]string{"Retry-After": "30"})
func (s *Server) FailNext(method, pathPattern string, status int, headers map[string]string) {
	s.FailNextWith(Fault{Method: method, Path: pathPattern, Status: status, Header: headers})
}

// FailNextWith queues a fault with full control over the message.
func (s *Server) FailNextWith(f Fault) {
	if _, err := path.Match(f.Path, "/"); err != nil {
		panic(fmt.Sprintf("githubtest: bad path pattern %q: %v", f.Path, err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// PendingFaults is how many queued faults were not consumed yet.
func (s *Server) PendingFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults)
}

// Requests returns a copy of every request served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CountRequests counts recorded requests matching method ("" = any) and a
// path.Match pattern.
func (s *Server) CountRequests(method, pathPattern string) int {
	n := 0
	for _, r := range s.Requests() {
		if ok, _ := path.Match(pathPattern, r.Path); ok && (method == "" || method == r.Method) {
			n++
		}
	}
	return n
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// Dispatches returns the repository_dispatch events received so far.
func (s *Server) Dispatches() []Dispatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Dispatch(nil), s.dispatches...)
}

// TokenHash is how Request.TokenHash identifies token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:6])
}

func (s *Server) clock() time.Time { return s.now().UTC().Truncate(time.Second) }

// SkewDate moves the clock every answer's Date header says (GitHub's
// clock, which astra checks its own against before it records) by d from
// the fake's now: a negative d makes a client's clock look ahead.
func (s *Server) SkewDate(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew = d
}

// ---- HTTP plumbing ----

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// call is the context of one request being served.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	body  []byte
	login string
	repo  *git.Repository
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	rec := &recorder{ResponseWriter: w}
	token := bearer(r.Header.Get("Authorization"))

	s.mu.Lock()
	defer s.mu.Unlock()
	// Every answer says when it was made, as GitHub's do.
	rec.Header().Set("Date", s.clock().Add(s.skew).Format(http.TimeFormat))
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body}
	if token != "" {
		req.TokenHash = TokenHash(token)
	}
	defer func() {
		req.Status = rec.status
		s.requests = append(s.requests, req)
	}()

	if s.injectFault(rec, r) {
		return
	}
	login, ok := s.tokens[token]
	if !ok {
		writeError(rec, http.StatusUnauthorized, "Bad credentials", "https://docs.github.com/rest")
		return
	}
	req.Login = login
	s.setRateHeaders(rec.Header())
	repo, err := s.open()
	if err != nil {
		writeError(rec, http.StatusInternalServerError, "githubtest: open repository: "+err.Error(), "")
		return
	}
	c := &call{w: rec, r: r, body: body, login: login, repo: repo}
	s.route(c)
}

func bearer(h string) string {
	for _, p := range []string{"Bearer ", "bearer ", "token ", "Token "} {
		if strings.HasPrefix(h, p) {
			return strings.TrimSpace(h[len(p):])
		}
	}
	return ""
}

func (s *Server) setRateHeaders(h http.Header) {
	s.rateUsed++
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(5000-s.rateUsed, 1)))
	h.Set("X-RateLimit-Used", strconv.Itoa(s.rateUsed))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.clock().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

func (s *Server) injectFault(w http.ResponseWriter, r *http.Request) bool {
	for i, f := range s.faults {
		if f.Method != "" && !strings.EqualFold(f.Method, r.Method) {
			continue
		}
		if ok, _ := path.Match(f.Path, r.URL.Path); !ok {
			continue
		}
		s.faults = append(s.faults[:i], s.faults[i+1:]...)
		msg, doc := f.Message, "https://docs.github.com/rest"
		_, secondary := f.Header["Retry-After"]
		primary := f.Header["X-RateLimit-Remaining"] == "0"
		switch {
		case primary:
			if msg == "" {
				msg = "API rate limit exceeded for installation ID 1."
			}
			doc = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
		case secondary || f.Status == http.StatusTooManyRequests:
			if msg == "" {
				msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID."
			}
			doc = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
		case msg != "":
		case f.Status == http.StatusForbidden:
			msg = "Resource not accessible by integration"
		case f.Status == http.StatusNotFound:
			msg = "Not Found"
		case f.Status == http.StatusUnauthorized:
			msg = "Bad credentials"
		case f.Status >= 500:
			msg = "Server Error"
		default:
			msg = http.StatusText(f.Status)
		}
		for k, v := range f.Header {
			w.Header().Set(k, v)
		}
		writeError(w, f.Status, msg, doc)
		return true
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// errorBody is GitHub's error document (go-github's ErrorResponse shape).
type errorBody struct {
	Message          string         `json:"message"`
	Errors           []github.Error `json:"errors,omitempty"`
	DocumentationURL string         `json:"documentation_url,omitempty"`
	Status           string         `json:"status,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg, doc string, errs ...github.Error) {
	if doc == "" {
		doc = "https://docs.github.com/rest"
	}
	writeJSON(w, status, errorBody{Message: msg, Errors: errs, DocumentationURL: doc, Status: strconv.Itoa(status)})
}

func notFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, "Not Found", "https://docs.github.com/rest")
}

func validationFailed(w http.ResponseWriter, errs ...github.Error) {
	writeError(w, http.StatusUnprocessableEntity, "Validation Failed", "https://docs.github.com/rest", errs...)
}

func unprocessable(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusUnprocessableEntity, msg, "https://docs.github.com/rest")
}

// decode strictly decodes the request body: an unknown field means the
// client's request shape does not match GitHub's.
func decode(c *call, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(c.w, http.StatusBadRequest, "Problems parsing JSON: "+err.Error(), "https://docs.github.com/rest")
		return false
	}
	return true
}

// paginate applies page/per_page like GitHub (default 30, at most 100) and
// sets the Link header go-github reads NextPage from.
func paginate[T any](s *Server, c *call, items []T) []T {
	q := c.r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	last := max((len(items)+per-1)/per, 1)
	link := func(p int, rel string) string {
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", s.URL, c.r.URL.Path, q.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo := min((page-1)*per, len(items))
	hi := min(lo+per, len(items))
	return items[lo:hi]
}

// ---- routing ----

// testdata/openapi.json is GitHub's REST API description from the pinned
// @octokit/openapi, reduced to the routes' operations; the conformance test
// checks the fake against it. Regenerate it when routes change.
//go:generate go run ./testdata/openapigen -version 23.0.2 -out testdata/openapi.json

// routes are the GitHub operations the fake serves. op is the operation's
// key in GitHub's OpenAPI description, "METHOD /path/{param}", and is what
// requests are matched against; a last {ref}, {path} or {branch} spans
// slashes, and any parameter may hold an escaped one (%2F).
var routes = []struct {
	op    string
	serve func(s *Server, c *call, p map[string]string)
}{
	{"GET /repos/{owner}/{repo}", func(s *Server, c *call, p map[string]string) { s.getRepo(c) }},
	{"GET /repos/{owner}/{repo}/git/ref/{ref}", func(s *Server, c *call, p map[string]string) { s.getRef(c, p["ref"]) }},
	{"POST /repos/{owner}/{repo}/git/refs", func(s *Server, c *call, p map[string]string) { s.createRef(c) }},
	{"POST /repos/{owner}/{repo}/git/blobs", func(s *Server, c *call, p map[string]string) { s.createBlob(c) }},
	{"POST /repos/{owner}/{repo}/git/trees", func(s *Server, c *call, p map[string]string) { s.createTree(c) }},
	{"POST /repos/{owner}/{repo}/git/commits", func(s *Server, c *call, p map[string]string) { s.createCommit(c) }},
	{"PATCH /repos/{owner}/{repo}/git/refs/{ref}", func(s *Server, c *call, p map[string]string) { s.updateRef(c, p["ref"]) }},
	{"GET /repos/{owner}/{repo}/contents/{path}", func(s *Server, c *call, p map[string]string) { s.getContents(c, p["path"]) }},
	{"PUT /repos/{owner}/{repo}/contents/{path}", func(s *Server, c *call, p map[string]string) { s.putContents(c, p["path"]) }},
	{"GET /repos/{owner}/{repo}/pulls", func(s *Server, c *call, p map[string]string) { s.listPulls(c) }},
	{"POST /repos/{owner}/{repo}/pulls", func(s *Server, c *call, p map[string]string) { s.createPull(c) }},
	{"GET /repos/{owner}/{repo}/pulls/{pull_number}", func(s *Server, c *call, p map[string]string) { s.withPull(c, p["pull_number"], s.getPull) }},
	{"PATCH /repos/{owner}/{repo}/pulls/{pull_number}", func(s *Server, c *call, p map[string]string) { s.withPull(c, p["pull_number"], s.editPull) }},
	{"PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", func(s *Server, c *call, p map[string]string) { s.withPull(c, p["pull_number"], s.mergePull) }},
	{"POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers", func(s *Server, c *call, p map[string]string) {
		s.withPull(c, p["pull_number"], s.requestReviewers)
	}},
	{"GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", func(s *Server, c *call, p map[string]string) { s.withPull(c, p["pull_number"], s.listReviews) }},
	{"POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", func(s *Server, c *call, p map[string]string) { s.withPull(c, p["pull_number"], s.createReview) }},
	{"PUT /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals", func(s *Server, c *call, p map[string]string) {
		s.withPull(c, p["pull_number"], func(c *call, is *issue) { s.dismissReview(c, is, p["review_id"]) })
	}},
	{"POST /repos/{owner}/{repo}/issues", func(s *Server, c *call, p map[string]string) { s.createIssue(c) }},
	{"POST /repos/{owner}/{repo}/issues/{issue_number}/labels", func(s *Server, c *call, p map[string]string) { s.withIssue(c, p["issue_number"], s.addLabels) }},
	{"GET /repos/{owner}/{repo}/issues/{issue_number}/comments", func(s *Server, c *call, p map[string]string) { s.withIssue(c, p["issue_number"], s.listComments) }},
	{"POST /repos/{owner}/{repo}/issues/{issue_number}/comments", func(s *Server, c *call, p map[string]string) { s.withIssue(c, p["issue_number"], s.createComment) }},
	{"GET /repos/{owner}/{repo}/issues/{issue_number}/events", func(s *Server, c *call, p map[string]string) { s.withIssue(c, p["issue_number"], s.listEvents) }},
	{"POST /repos/{owner}/{repo}/dispatches", func(s *Server, c *call, p map[string]string) { s.dispatch(c) }},
	{"GET /repos/{owner}/{repo}/pulls/{pull_number}/files", func(s *Server, c *call, p map[string]string) { s.withPull(c, p["pull_number"], s.listPullFiles) }},
	{"GET /repos/{owner}/{repo}/rules/branches/{branch}", func(s *Server, c *call, p map[string]string) { s.branchRules(c, p["branch"]) }},
	{"GET /repos/{owner}/{repo}/branches/{branch}/protection", func(s *Server, c *call, p map[string]string) { s.branchProtection(c, p["branch"]) }},
	{"GET /repos/{owner}/{repo}/environments/{environment_name}", func(s *Server, c *call, p map[string]string) {
		s.withEnvironment(c, p["environment_name"], s.getEnvironment)
	}},
	{"GET /repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies", func(s *Server, c *call, p map[string]string) {
		s.withEnvironment(c, p["environment_name"], s.deploymentPolicies)
	}},
	{"GET /repos/{owner}/{repo}/actions/secrets/{secret_name}", func(s *Server, c *call, p map[string]string) { s.getSecret(c, p["secret_name"]) }},
	{"GET /repos/{owner}/{repo}/actions/permissions/workflow", func(s *Server, c *call, p map[string]string) { s.workflowPermissions(c) }},
	{"GET /orgs/{org}/teams/{team_slug}", func(s *Server, c *call, p map[string]string) { s.getTeam(c, p["org"], p["team_slug"]) }},
	{"GET /orgs/{org}/teams/{team_slug}/memberships/{username}", func(s *Server, c *call, p map[string]string) {
		s.getMembership(c, p["org"], p["team_slug"], p["username"])
	}},
}

// Operations lists the operations the fake serves as keys of GitHub's
// OpenAPI description ("GET /repos/{owner}/{repo}/pulls"), in routing order.
func Operations() []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = r.op
	}
	return out
}

// matchRoute finds the route for method and urlPath (escaped, as on the
// wire) and its path parameters, unescaped; i is -1 when none matches.
func matchRoute(method, urlPath string) (i int, params map[string]string) {
	seg := strings.Split(strings.Trim(urlPath, "/"), "/")
	for i, r := range routes {
		m, tmpl, _ := strings.Cut(r.op, " ")
		if m != method {
			continue
		}
		if p, ok := matchPath(strings.Split(strings.Trim(tmpl, "/"), "/"), seg); ok {
			return i, p
		}
	}
	return -1, nil
}

func matchPath(tmpl, seg []string) (map[string]string, bool) {
	p := map[string]string{}
	unescape := func(segs []string) (string, bool) {
		out := make([]string, len(segs))
		for i, s := range segs {
			u, err := url.PathUnescape(s)
			if err != nil {
				return "", false
			}
			out[i] = u
		}
		return strings.Join(out, "/"), true
	}
	for i, t := range tmpl {
		name, isParam := strings.CutPrefix(t, "{")
		name = strings.TrimSuffix(name, "}")
		if isParam && i == len(tmpl)-1 && (name == "ref" || name == "path" || name == "branch") {
			if len(seg) < i {
				return nil, false
			}
			v, ok := unescape(seg[i:])
			p[name] = v
			return p, ok && (name != "branch" || v != "")
		}
		switch {
		case i >= len(seg) || seg[i] == "":
			return nil, false
		case isParam:
			v, ok := unescape(seg[i : i+1])
			if !ok {
				return nil, false
			}
			p[name] = v
		case t != seg[i]:
			return nil, false
		}
	}
	return p, len(seg) == len(tmpl)
}

func (s *Server) route(c *call) {
	i, p := matchRoute(c.r.Method, c.r.URL.EscapedPath())
	if i < 0 {
		notFound(c.w)
		return
	}
	op := routes[i].op
	if strings.Contains(op, " /repos/") {
		if !strings.EqualFold(p["owner"], s.owner) || !strings.EqualFold(p["repo"], s.name) {
			notFound(c.w)
			return
		}
		if c.r.Method != http.MethodGet && !s.mayWrite(c, op) {
			writeError(c.w, http.StatusForbidden, "Resource not accessible by integration",
				"https://docs.github.com/rest")
			return
		}
	}
	routes[i].serve(s, c, p)
}

// mayWrite: read-only users may comment and review; every other change
// needs write.
func (s *Server) mayWrite(c *call, op string) bool {
	return !s.readOnly[strings.ToLower(c.login)] || op == "POST /repos/{owner}/{repo}/issues/{issue_number}/comments" ||
		op == "POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews"
}

func (s *Server) withIssue(c *call, num string, f func(*call, *issue)) {
	n, err := strconv.Atoi(num)
	is := s.issues[n]
	if err != nil || is == nil {
		notFound(c.w)
		return
	}
	f(c, is)
}

func (s *Server) withPull(c *call, num string, f func(*call, *issue)) {
	s.withIssue(c, num, func(c *call, is *issue) {
		if is.pull == nil {
			notFound(c.w)
			return
		}
		f(c, is)
	})
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) addEvent(is *issue, actor, name, commit, label string) {
	is.events = append(is.events, &event{id: s.newID(), actor: actor, event: name, commit: commit, label: label, at: s.clock()})
}

func (s *Server) ensureLabel(name string) *label {
	key := strings.ToLower(name)
	if s.labels[key] == nil {
		s.labels[key] = &label{id: s.newID(), name: name, color: "ededed"}
	}
	return s.labels[key]
}

// addLabelsTo adds labels to an issue (set union, as GitHub) and records
// one "labeled" event per label actually added.
func (s *Server) addLabelsTo(is *issue, actor string, names []string) {
	for _, n := range names {
		l := s.ensureLabel(n)
		dup := false
		for _, have := range is.labels {
			dup = dup || strings.EqualFold(have, n)
		}
		if !dup {
			is.labels = append(is.labels, l.name)
			s.addEvent(is, actor, "labeled", "", l.name)
		}
	}
	sort.Strings(is.labels)
}
