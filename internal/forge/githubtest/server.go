// Package githubtest is a fake GitHub REST API for tests, backed by a real
// bare git repository.
//
// It implements exactly the endpoints astra's forge client uses, with
// GitHub's request and response JSON shapes (responses are go-github types,
// requests are decoded strictly into go-github types or exact mirrors of its
// unexported request structs). The repository's branches are the source of
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
	"path"
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
//   - no forks, no drafts semantics, no branch protection, no webhooks, no
//     workflow runs; repository_dispatch is only recorded (Dispatches);
//   - one permission bit per user (write or read-only, SetWrite), instead of
//     GitHub's fine-grained token permissions;
//   - team memberships are visible to every authenticated user.
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

	mu         sync.Mutex
	users      map[string]*github.User // token -> user
	readOnly   map[string]bool         // lower(login) -> true when read-only
	issues     map[int]*issue
	nextNumber int
	nextID     int64
	labels     map[string]*github.Label // lower(name) -> label
	teams      map[string]map[string]string
	faults     []Fault
	requests   []Request
	dispatches []Dispatch
	rateUsed   int
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
	comments  []*github.IssueComment
	events    []*github.IssueEvent
	pull      *pull // nil for a plain issue
}

type pull struct {
	head, base     string // branch names
	headSHA        string // frozen once closed
	merged         bool
	mergedBy       string
	mergedAt       time.Time
	mergeCommitSHA string
	draft          bool
	maintainerMod  bool
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
		users:         map[string]*github.User{},
		readOnly:      map[string]bool{},
		issues:        map[int]*issue{},
		nextNumber:    1,
		labels:        map[string]*github.Label{},
		teams:         map[string]map[string]string{},
	}
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
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	s.nextID++
	s.users[token] = &github.User{
		Login:   github.String(login),
		ID:      github.Int64(1000 + s.nextID),
		Type:    github.String(typ),
		HTMLURL: github.String(s.URL + "/" + login),
		URL:     github.String(s.URL + "/users/" + login),
	}
}

// SetWrite grants or revokes write permission on the repository for login.
// A read-only user may read and comment; anything else answers 403.
func (s *Server) SetWrite(login string, write bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly[strings.ToLower(login)] = !write
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
		s.teams[key] = map[string]string{}
	}
	if login != "" {
		s.teams[key][strings.ToLower(login)] = state
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
	user  *github.User
	repo  *git.Repository
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	rec := &recorder{ResponseWriter: w}
	token := bearer(r.Header.Get("Authorization"))

	s.mu.Lock()
	defer s.mu.Unlock()
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
	u := s.users[token]
	if u == nil {
		writeError(rec, http.StatusUnauthorized, "Bad credentials", "https://docs.github.com/rest")
		return
	}
	req.Login = u.GetLogin()
	s.setRateHeaders(rec.Header())
	repo, err := s.open()
	if err != nil {
		writeError(rec, http.StatusInternalServerError, "githubtest: open repository: "+err.Error(), "")
		return
	}
	c := &call{w: rec, r: r, body: body, login: u.GetLogin(), user: u, repo: repo}
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

func (s *Server) route(c *call) {
	seg := strings.Split(strings.Trim(c.r.URL.Path, "/"), "/")
	m := c.r.Method
	if len(seg) >= 4 && seg[0] == "orgs" && seg[2] == "teams" {
		switch {
		case len(seg) == 4 && m == http.MethodGet:
			s.getTeam(c, seg[1], seg[3])
			return
		case len(seg) == 6 && seg[4] == "memberships" && m == http.MethodGet:
			s.getMembership(c, seg[1], seg[3], seg[5])
			return
		}
		notFound(c.w)
		return
	}
	if len(seg) < 3 || seg[0] != "repos" || !strings.EqualFold(seg[1], s.owner) || !strings.EqualFold(seg[2], s.name) {
		notFound(c.w)
		return
	}
	rest := seg[3:]
	if m != http.MethodGet && !s.mayWrite(c, rest) {
		writeError(c.w, http.StatusForbidden, "Resource not accessible by integration",
			"https://docs.github.com/rest")
		return
	}
	at := func(i int) string {
		if i < len(rest) {
			return rest[i]
		}
		return ""
	}
	switch {
	case len(rest) == 0 && m == http.MethodGet:
		s.getRepo(c)
	case at(0) == "git" && at(1) == "ref" && len(rest) > 2 && m == http.MethodGet:
		s.getRef(c, strings.Join(rest[2:], "/"))
	case at(0) == "git" && at(1) == "refs" && len(rest) == 2 && m == http.MethodPost:
		s.createRef(c)
	case at(0) == "git" && at(1) == "refs" && len(rest) > 2 && m == http.MethodGet:
		s.getRef(c, strings.Join(rest[2:], "/"))
	case at(0) == "git" && at(1) == "refs" && len(rest) > 2 && m == http.MethodPatch:
		s.updateRef(c, strings.Join(rest[2:], "/"))
	case at(0) == "contents" && m == http.MethodGet:
		s.getContents(c, strings.Join(rest[1:], "/"))
	case at(0) == "contents" && len(rest) > 1 && m == http.MethodPut:
		s.putContents(c, strings.Join(rest[1:], "/"))
	case at(0) == "pulls" && len(rest) == 1 && m == http.MethodGet:
		s.listPulls(c)
	case at(0) == "pulls" && len(rest) == 1 && m == http.MethodPost:
		s.createPull(c)
	case at(0) == "pulls" && len(rest) == 2 && m == http.MethodGet:
		s.withPull(c, at(1), s.getPull)
	case at(0) == "pulls" && len(rest) == 2 && m == http.MethodPatch:
		s.withPull(c, at(1), s.editPull)
	case at(0) == "pulls" && len(rest) == 3 && at(2) == "merge" && m == http.MethodPut:
		s.withPull(c, at(1), s.mergePull)
	case at(0) == "issues" && len(rest) == 1 && m == http.MethodPost:
		s.createIssue(c)
	case at(0) == "issues" && len(rest) == 3 && at(2) == "labels" && m == http.MethodPost:
		s.withIssue(c, at(1), s.addLabels)
	case at(0) == "issues" && len(rest) == 3 && at(2) == "comments" && m == http.MethodGet:
		s.withIssue(c, at(1), s.listComments)
	case at(0) == "issues" && len(rest) == 3 && at(2) == "comments" && m == http.MethodPost:
		s.withIssue(c, at(1), s.createComment)
	case at(0) == "issues" && len(rest) == 3 && at(2) == "events" && m == http.MethodGet:
		s.withIssue(c, at(1), s.listEvents)
	case at(0) == "dispatches" && len(rest) == 1 && m == http.MethodPost:
		s.dispatch(c)
	default:
		notFound(c.w)
	}
}

// mayWrite: read-only users may comment; every other change needs write.
func (s *Server) mayWrite(c *call, rest []string) bool {
	if !s.readOnly[strings.ToLower(c.login)] {
		return true
	}
	return len(rest) == 3 && rest[0] == "issues" && rest[2] == "comments"
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

// ---- JSON builders (go-github types, so shapes match GitHub) ----

func (s *Server) apiURL(p string, args ...any) string {
	return s.URL + fmt.Sprintf(p, args...)
}

func (s *Server) repoAPI() string { return s.apiURL("/repos/%s/%s", s.owner, s.name) }

func (s *Server) userJSON(login string) *github.User {
	for _, u := range s.users {
		if strings.EqualFold(u.GetLogin(), login) {
			cp := *u
			return &cp
		}
	}
	return &github.User{Login: github.String(login), Type: github.String("User")}
}

func (s *Server) repoJSON(c *call) *github.Repository {
	write := !s.readOnly[strings.ToLower(c.login)]
	return &github.Repository{
		ID:            github.Int64(4242),
		NodeID:        github.String("R_fake"),
		Name:          github.String(s.name),
		FullName:      github.String(s.owner + "/" + s.name),
		Owner:         &github.User{Login: github.String(s.owner), Type: github.String("Organization")},
		Private:       github.Bool(true),
		HTMLURL:       github.String(s.URL + "/" + s.owner + "/" + s.name),
		URL:           github.String(s.repoAPI()),
		DefaultBranch: github.String(s.defaultBranch),
		Permissions:   map[string]bool{"admin": false, "maintain": false, "push": write, "triage": write, "pull": true},
	}
}

func ts(t time.Time) *github.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &github.Timestamp{Time: t}
}

func (s *Server) labelsJSON(names []string) []*github.Label {
	out := []*github.Label{}
	for _, n := range names {
		out = append(out, s.labels[strings.ToLower(n)])
	}
	return out
}

func (s *Server) issueJSON(is *issue) *github.Issue {
	out := &github.Issue{
		ID:        github.Int64(is.id),
		Number:    github.Int(is.number),
		State:     github.String(is.state),
		Title:     github.String(is.title),
		Body:      github.String(is.body),
		User:      s.userJSON(is.user),
		Labels:    s.labelsJSON(is.labels),
		Comments:  github.Int(len(is.comments)),
		CreatedAt: ts(is.createdAt),
		UpdatedAt: ts(is.updatedAt),
		ClosedAt:  ts(is.closedAt),
		URL:       github.String(s.apiURL("/repos/%s/%s/issues/%d", s.owner, s.name, is.number)),
		HTMLURL:   github.String(s.apiURL("/%s/%s/issues/%d", s.owner, s.name, is.number)),
	}
	if is.pull != nil {
		out.HTMLURL = github.String(s.apiURL("/%s/%s/pull/%d", s.owner, s.name, is.number))
		out.PullRequestLinks = &github.PullRequestLinks{URL: github.String(s.apiURL("/repos/%s/%s/pulls/%d", s.owner, s.name, is.number))}
	}
	return out
}

func (s *Server) pullJSON(c *call, is *issue) *github.PullRequest {
	p := is.pull
	headSHA := p.headSHA
	if is.state == "open" {
		if h, _ := branchTip(c.repo, p.head); !h.IsZero() {
			headSHA = h.String()
		}
	}
	baseTip, _ := branchTip(c.repo, p.base)
	ghRepo := s.repoJSON(c)
	out := &github.PullRequest{
		ID:                  github.Int64(is.id),
		NodeID:              github.String(fmt.Sprintf("PR_fake%d", is.number)),
		Number:              github.Int(is.number),
		State:               github.String(is.state),
		Locked:              github.Bool(false),
		Title:               github.String(is.title),
		Body:                github.String(is.body),
		CreatedAt:           ts(is.createdAt),
		UpdatedAt:           ts(is.updatedAt),
		ClosedAt:            ts(is.closedAt),
		MergedAt:            ts(p.mergedAt),
		Labels:              s.labelsJSON(is.labels),
		User:                s.userJSON(is.user),
		Draft:               github.Bool(p.draft),
		Merged:              github.Bool(p.merged),
		Comments:            github.Int(len(is.comments)),
		MaintainerCanModify: github.Bool(p.maintainerMod),
		URL:                 github.String(s.apiURL("/repos/%s/%s/pulls/%d", s.owner, s.name, is.number)),
		HTMLURL:             github.String(s.apiURL("/%s/%s/pull/%d", s.owner, s.name, is.number)),
		IssueURL:            github.String(s.apiURL("/repos/%s/%s/issues/%d", s.owner, s.name, is.number)),
		CommentsURL:         github.String(s.apiURL("/repos/%s/%s/issues/%d/comments", s.owner, s.name, is.number)),
		Head: &github.PullRequestBranch{
			Label: github.String(s.owner + ":" + p.head),
			Ref:   github.String(p.head),
			SHA:   github.String(headSHA),
			Repo:  ghRepo,
			User:  ghRepo.Owner,
		},
		Base: &github.PullRequestBranch{
			Label: github.String(s.owner + ":" + p.base),
			Ref:   github.String(p.base),
			SHA:   github.String(baseTip.String()),
			Repo:  ghRepo,
			User:  ghRepo.Owner,
		},
	}
	if p.merged {
		out.MergedBy = s.userJSON(p.mergedBy)
		out.MergeCommitSHA = github.String(p.mergeCommitSHA)
	}
	if is.state == "open" {
		mergeable := s.mergeable(c, p)
		out.Mergeable = github.Bool(mergeable)
		if mergeable {
			out.MergeableState = github.String("clean")
		} else {
			out.MergeableState = github.String("dirty")
		}
	}
	return out
}

func (s *Server) mergeable(c *call, p *pull) bool {
	head, _ := branchTip(c.repo, p.head)
	base, _ := branchTip(c.repo, p.base)
	if head.IsZero() || base.IsZero() {
		return false
	}
	_, err := mergedTree(c.repo, base, head)
	return err == nil
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) addEvent(is *issue, actor, event, commit, label string) {
	e := &github.IssueEvent{
		ID:        github.Int64(s.newID()),
		URL:       github.String(s.apiURL("/repos/%s/%s/issues/events/%d", s.owner, s.name, s.nextID)),
		Actor:     s.userJSON(actor),
		Event:     github.String(event),
		CreatedAt: ts(s.clock()),
	}
	if commit != "" {
		e.CommitID = github.String(commit)
	}
	if label != "" {
		e.Label = &github.Label{Name: github.String(label)}
	}
	is.events = append(is.events, e)
}

func (s *Server) ensureLabel(name string) {
	key := strings.ToLower(name)
	if s.labels[key] != nil {
		return
	}
	s.labels[key] = &github.Label{
		ID:      github.Int64(s.newID()),
		Name:    github.String(name),
		Color:   github.String("ededed"),
		URL:     github.String(s.apiURL("/repos/%s/%s/labels/%s", s.owner, s.name, name)),
		Default: github.Bool(false),
	}
}

// addLabels adds labels to an issue (set union, as GitHub) and records one
// "labeled" event per label actually added.
func (s *Server) addLabelsTo(is *issue, actor string, names []string) {
	for _, n := range names {
		s.ensureLabel(n)
		dup := false
		for _, have := range is.labels {
			dup = dup || strings.EqualFold(have, n)
		}
		if !dup {
			is.labels = append(is.labels, s.labels[strings.ToLower(n)].GetName())
			s.addEvent(is, actor, "labeled", "", n)
		}
	}
	sort.Strings(is.labels)
}
