package githubtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-github/v60/github"
)

const maxBody = 65536 // GitHub's limit for issue and pull request bodies

// ---- repository and refs ----

func (s *Server) getRepo(c *call) {
	writeJSON(c.w, http.StatusOK, s.repoJSON(c, true))
}

// getRef serves GET git/ref/{ref}: one exact branch or tag.
func (s *Server) getRef(c *call, ref string) {
	name := plumbing.ReferenceName("refs/" + ref)
	r, err := c.repo.Reference(name, true)
	if err != nil || !(name.IsBranch() || name.IsTag()) {
		notFound(c.w)
		return
	}
	writeJSON(c.w, http.StatusOK, s.refJSON(name.String(), r.Hash()))
}

// createRefRequest mirrors go-github's unexported request struct.
type createRefRequest struct {
	Ref *string `json:"ref"`
	SHA *string `json:"sha"`
}

func (s *Server) createRef(c *call) {
	var req createRefRequest
	if !decode(c, &req) {
		return
	}
	if req.Ref == nil || req.SHA == nil {
		unprocessable(c.w, `Invalid request.

"ref", "sha" weren't supplied.`)
		return
	}
	name := plumbing.ReferenceName(*req.Ref)
	if !name.IsBranch() || name.Validate() != nil || strings.Count(name.String(), "/") < 2 {
		unprocessable(c.w, "Reference name is invalid") // the fake only creates branches
		return
	}
	h := plumbing.NewHash(*req.SHA)
	if _, err := c.repo.CommitObject(h); !plumbing.IsHash(*req.SHA) || err != nil {
		unprocessable(c.w, "Object does not exist")
		return
	}
	if err := setBranch(c.repo, name.Short(), h, plumbing.ZeroHash); err != nil {
		unprocessable(c.w, "Reference already exists")
		return
	}
	ref := s.refJSON(name.String(), h)
	c.w.Header().Set("Location", ref.GetURL())
	writeJSON(c.w, http.StatusCreated, ref)
}

// updateRefRequest mirrors go-github's unexported request struct.
type updateRefRequest struct {
	SHA   *string `json:"sha"`
	Force *bool   `json:"force"`
}

func (s *Server) updateRef(c *call, ref string) {
	var req updateRefRequest
	if !decode(c, &req) {
		return
	}
	name := plumbing.ReferenceName("refs/" + ref)
	cur, err := c.repo.Reference(name, true)
	if err != nil || !name.IsBranch() {
		unprocessable(c.w, "Reference does not exist")
		return
	}
	if req.SHA == nil || !plumbing.IsHash(*req.SHA) {
		unprocessable(c.w, `Invalid request.

"sha" wasn't supplied.`)
		return
	}
	h := plumbing.NewHash(*req.SHA)
	if _, err := c.repo.CommitObject(h); err != nil {
		unprocessable(c.w, "Object does not exist")
		return
	}
	if req.Force == nil || !*req.Force {
		if ff, err := isAncestor(c.repo, cur.Hash(), h); err != nil || !ff {
			unprocessable(c.w, "Update is not a fast forward")
			return
		}
	}
	if err := setBranch(c.repo, name.Short(), h, cur.Hash()); err != nil {
		writeError(c.w, http.StatusConflict, "Reference update failed", "")
		return
	}
	writeJSON(c.w, http.StatusOK, s.refJSON(name.String(), h))
}

// ---- contents ----

// wrap64 encodes like GitHub: base64 with a newline every 60 characters.
func wrap64(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60])
		b.WriteByte('\n')
		enc = enc[60:]
	}
	b.WriteString(enc)
	b.WriteByte('\n')
	return b.String()
}

func contentType(m filemode.FileMode) string {
	switch m {
	case filemode.Dir:
		return "dir"
	case filemode.Symlink:
		return "symlink"
	case filemode.Submodule:
		return "submodule"
	}
	return "file"
}

func (s *Server) getContents(c *call, p string) {
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = s.defaultBranch
	}
	commit, ok := resolveRef(c.repo, ref)
	if !ok {
		writeError(c.w, http.StatusNotFound, "No commit found for the ref "+ref, "https://docs.github.com/rest/repos/contents#get-repository-content")
		return
	}
	co, err := c.repo.CommitObject(commit)
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	dir, err := co.Tree()
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	p = strings.Trim(p, "/")
	if p != "" {
		e, err := dir.FindEntry(p)
		if err != nil {
			writeError(c.w, http.StatusNotFound, "Not Found", "https://docs.github.com/rest/repos/contents#get-repository-content")
			return
		}
		if e.Mode != filemode.Dir {
			s.getFile(c, p, e, ref)
			return
		}
		if dir, err = dir.Tree(p); err != nil {
			writeError(c.w, http.StatusInternalServerError, err.Error(), "")
			return
		}
	}
	entries := append([]object.TreeEntry(nil), dir.Entries...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	list := make([]any, 0, len(entries))
	for _, e := range entries {
		size := 0
		if e.Mode.IsFile() {
			if b, err := c.repo.BlobObject(e.Hash); err == nil {
				size = int(b.Size)
			}
		}
		list = append(list, s.contentJSON(path.Join(p, e.Name), contentType(e.Mode), e.Hash, size, ref))
	}
	writeJSON(c.w, http.StatusOK, list)
}

// getFile answers for a file (with its content), a symlink (with its
// target) or a submodule.
func (s *Server) getFile(c *call, p string, e *object.TreeEntry, ref string) {
	typ := contentType(e.Mode)
	if typ == "submodule" {
		out := s.contentJSON(p, typ, e.Hash, 0, ref)
		out["submodule_git_url"] = ""
		writeJSON(c.w, http.StatusOK, out)
		return
	}
	data, err := readBlob(c.repo, e.Hash)
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	out := s.contentJSON(p, typ, e.Hash, len(data), ref)
	if typ == "symlink" {
		out["target"] = string(data)
	} else {
		out["content"], out["encoding"] = wrap64(data), "base64"
	}
	writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) putContents(c *call, p string) {
	var req github.RepositoryContentFileOptions
	if !decode(c, &req) {
		return
	}
	p = strings.Trim(p, "/")
	if msg := contentsRequestProblem(&req, p); msg != "" {
		unprocessable(c.w, msg)
		return
	}
	branch := s.defaultBranch
	if req.Branch != nil && *req.Branch != "" {
		branch = strings.TrimPrefix(*req.Branch, "refs/heads/")
	}
	tip, err := branchTip(c.repo, branch)
	if err != nil || tip.IsZero() {
		writeError(c.w, http.StatusNotFound, "Branch "+branch+" not found", "https://docs.github.com/rest/repos/contents#create-or-update-file-contents")
		return
	}
	fs, err := flatten(c.repo, tip)
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	_, exists := fs[p]
	if !contentsPrecondition(c, fs, p, req.GetSHA()) {
		return
	}
	author, who := fileSignatures(&req, signature(c.login, s.clock()))
	commit, err := commitFiles(c.repo, tip, map[string][]byte{p: req.Content}, *req.Message, author, who)
	if err == nil {
		err = setBranch(c.repo, branch, commit, tip)
	}
	if err != nil {
		writeError(c.w, http.StatusConflict, "githubtest: "+err.Error(), "")
		return
	}
	nfs, err := flatten(c.repo, commit)
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	co, err := c.repo.CommitObject(commit)
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	out := jsonObj{
		"content": s.contentJSON(p, "file", nfs[p].Hash, len(req.Content), branch),
		"commit":  s.fileCommitJSON(co, tip, author, who),
	}
	status := http.StatusOK
	if !exists {
		status = http.StatusCreated
	}
	writeJSON(c.w, status, out)
}

// fileSignatures are the author and committer of a file write: the
// caller's unless the request names others.
func fileSignatures(req *github.RepositoryContentFileOptions, caller object.Signature) (author, committer object.Signature) {
	committer = caller
	if a := req.Committer; a != nil && a.GetName() != "" {
		committer.Name, committer.Email = a.GetName(), a.GetEmail()
	}
	author = committer
	if a := req.Author; a != nil && a.GetName() != "" {
		author.Name, author.Email = a.GetName(), a.GetEmail()
	}
	return author, committer
}

// contentsRequestProblem is GitHub's 422 message for a malformed
// create-or-update-file request, or "".
func contentsRequestProblem(req *github.RepositoryContentFileOptions, p string) string {
	switch {
	case req.Message == nil || *req.Message == "":
		return "Invalid request.\n\n\"message\" wasn't supplied."
	case req.Content == nil:
		return "Invalid request.\n\n\"content\" wasn't supplied."
	case p == "" || strings.Contains("/"+p+"/", "/../") || strings.Contains("/"+p+"/", "/./") || strings.Contains(p, "//") || strings.HasPrefix(p, ".git/"):
		return "path contains a malformed path component"
	}
	return ""
}

// contentsPrecondition answers as GitHub does when p is a directory or sha
// is not the blob being replaced; it reports whether the write may go on.
func contentsPrecondition(c *call, fs files, p, sha string) bool {
	for fp := range fs {
		if strings.HasPrefix(fp, p+"/") {
			unprocessable(c.w, fmt.Sprintf("%s is a directory", p))
			return false
		}
	}
	old, exists := fs[p]
	switch {
	case exists && sha == "":
		unprocessable(c.w, "Invalid request.\n\n\"sha\" wasn't supplied.")
		return false
	case exists && sha != old.Hash.String(), !exists && sha != "":
		writeError(c.w, http.StatusConflict, fmt.Sprintf("%s does not match %s", p, sha), "https://docs.github.com/rest/repos/contents#create-or-update-file-contents")
		return false
	}
	return true
}

// fileCommitJSON is the "commit" of a create-or-update-file answer.
func (s *Server) fileCommitJSON(co *object.Commit, parent plumbing.Hash, author, who object.Signature) jsonObj {
	commit := co.Hash
	commitAPI := func(h plumbing.Hash) string { return s.repoAPI() + "/git/commits/" + h.String() }
	commitHTML := func(h plumbing.Hash) string { return s.repoHTML() + "/commit/" + h.String() }
	person := func(sig object.Signature) jsonObj {
		return jsonObj{"name": sig.Name, "email": sig.Email, "date": timeJSON(sig.When)}
	}
	return jsonObj{
		"sha":          commit.String(),
		"node_id":      "C_fake" + commit.String()[:12],
		"url":          commitAPI(commit),
		"html_url":     commitHTML(commit),
		"author":       person(author),
		"committer":    person(who),
		"tree":         jsonObj{"url": s.repoAPI() + "/git/trees/" + co.TreeHash.String(), "sha": co.TreeHash.String()},
		"message":      co.Message,
		"parents":      []jsonObj{{"url": commitAPI(parent), "html_url": commitHTML(parent), "sha": parent.String()}},
		"verification": jsonObj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
	}
}

// ---- pull requests ----

func (s *Server) sortedIssues() []*issue {
	out := make([]*issue, 0, len(s.issues))
	for _, is := range s.issues {
		out = append(out, is)
	}
	// GitHub lists newest first by default.
	sort.Slice(out, func(i, j int) bool { return out[i].number > out[j].number })
	return out
}

func (s *Server) listPulls(c *call) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var headOwner, headRef string
	if h := q.Get("head"); h != "" {
		var ok bool
		if headOwner, headRef, ok = strings.Cut(h, ":"); !ok {
			headOwner, headRef = h, "" // GitHub: "user" alone filters by owner
		}
	}
	list := []jsonObj{}
	for _, is := range s.sortedIssues() {
		p := is.pull
		switch {
		case p == nil,
			state != "all" && is.state != state,
			headOwner != "" && !strings.EqualFold(headOwner, s.owner),
			headRef != "" && headRef != p.head,
			q.Get("base") != "" && q.Get("base") != p.base:
			continue
		}
		list = append(list, s.pullJSON(c, is, false))
	}
	writeJSON(c.w, http.StatusOK, paginate(s, c, list))
}

func (s *Server) createPull(c *call) {
	var req github.NewPullRequest
	if !decode(c, &req) {
		return
	}
	head := req.GetHead()
	if o, b, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(o, s.owner) {
			validationFailed(c.w, github.Error{Resource: "PullRequest", Field: "head", Code: "invalid"})
			return
		}
		head = b
	}
	base := req.GetBase()
	switch {
	case req.GetTitle() == "":
		validationFailed(c.w, github.Error{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		return
	case utf8.RuneCountInString(req.GetBody()) > maxBody:
		validationFailed(c.w, github.Error{Resource: "Issue", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	headTip, _ := branchTip(c.repo, head)
	if headTip.IsZero() {
		validationFailed(c.w, github.Error{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	}
	baseTip, _ := branchTip(c.repo, base)
	if baseTip.IsZero() {
		validationFailed(c.w, github.Error{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	}
	for _, is := range s.issues {
		if p := is.pull; p != nil && is.state == "open" && p.head == head && p.base == base {
			validationFailed(c.w, github.Error{Resource: "PullRequest", Code: "custom",
				Message: fmt.Sprintf("A pull request already exists for %s:%s.", s.owner, head)})
			return
		}
	}
	if done, _ := isAncestor(c.repo, headTip, baseTip); done {
		validationFailed(c.w, github.Error{Resource: "PullRequest", Code: "custom",
			Message: fmt.Sprintf("No commits between %s and %s", base, head)})
		return
	}
	now := s.clock()
	is := &issue{
		number: s.nextNumber, id: s.newID(), title: req.GetTitle(), body: req.GetBody(),
		user: c.login, state: "open", createdAt: now, updatedAt: now,
		pull: &pull{head: head, base: base, headSHA: headTip.String(), draft: req.GetDraft(),
			maintainerMod: req.GetMaintainerCanModify()},
	}
	s.nextNumber++
	s.issues[is.number] = is
	out := s.pullJSON(c, is, true)
	c.w.Header().Set("Location", out["url"].(string))
	writeJSON(c.w, http.StatusCreated, out)
}

func (s *Server) getPull(c *call, is *issue) {
	writeJSON(c.w, http.StatusOK, s.pullJSON(c, is, true))
}

// pullRequestUpdate mirrors go-github's unexported request struct.
type pullRequestUpdate struct {
	Title               *string `json:"title,omitempty"`
	Body                *string `json:"body,omitempty"`
	State               *string `json:"state,omitempty"`
	Base                *string `json:"base,omitempty"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify,omitempty"`
}

func (s *Server) editPull(c *call, is *issue) {
	var req pullRequestUpdate
	if !decode(c, &req) {
		return
	}
	if e := pullEditProblem(c, is, &req); e != nil {
		validationFailed(c.w, *e)
		return
	}
	p := is.pull
	now := s.clock()
	if req.Title != nil {
		is.title = *req.Title
	}
	if req.Body != nil {
		is.body = *req.Body
	}
	if req.Base != nil {
		p.base = *req.Base
	}
	if req.MaintainerCanModify != nil {
		p.maintainerMod = *req.MaintainerCanModify
	}
	if req.State != nil && *req.State != is.state {
		s.setPullState(c, is, *req.State, now)
	}
	is.updatedAt = now
	writeJSON(c.w, http.StatusOK, s.pullJSON(c, is, true))
}

// pullEditProblem is GitHub's validation error for an update it refuses.
func pullEditProblem(c *call, is *issue, req *pullRequestUpdate) *github.Error {
	p := is.pull
	switch {
	case req.Title != nil && *req.Title == "":
		return &github.Error{Resource: "PullRequest", Field: "title", Code: "missing_field"}
	case req.Body != nil && utf8.RuneCountInString(*req.Body) > maxBody:
		return &github.Error{Resource: "Issue", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"}
	case req.State != nil && *req.State != "open" && *req.State != "closed":
		return &github.Error{Resource: "PullRequest", Field: "state", Code: "invalid"}
	case req.Base != nil && is.state == "closed":
		return &github.Error{Resource: "PullRequest", Code: "custom", Message: "Cannot change base branch of closed pull request."}
	case req.State != nil && *req.State == "open" && p.merged:
		return &github.Error{Resource: "PullRequest", Code: "custom", Message: "state cannot be changed. The pull request has been merged."}
	}
	return pullBranchProblem(c, is, req)
}

// pullBranchProblem refuses a base that does not exist, and reopening a
// pull request whose head branch was deleted.
func pullBranchProblem(c *call, is *issue, req *pullRequestUpdate) *github.Error {
	p := is.pull
	if req.Base != nil {
		if tip, _ := branchTip(c.repo, *req.Base); tip.IsZero() {
			return &github.Error{Resource: "PullRequest", Field: "base", Code: "invalid"}
		}
	}
	if req.State != nil && *req.State == "open" && is.state == "closed" {
		if tip, _ := branchTip(c.repo, p.head); tip.IsZero() {
			return &github.Error{Resource: "PullRequest", Code: "custom", Message: "state cannot be changed. The " + p.head + " branch has been deleted."}
		}
	}
	return nil
}

// setPullState closes (freezing the head, base and stats as GitHub does)
// or reopens a pull request.
func (s *Server) setPullState(c *call, is *issue, state string, now time.Time) {
	p := is.pull
	if state == "open" {
		is.state, is.closedAt, p.stats = "open", time.Time{}, nil
		s.addEvent(is, c.login, "reopened", "", "")
		return
	}
	if tip, _ := branchTip(c.repo, p.head); !tip.IsZero() {
		p.headSHA = tip.String()
	}
	p.stats = s.pullStats(c, p)
	if tip, _ := branchTip(c.repo, p.base); !tip.IsZero() {
		p.baseSHA = tip.String()
	}
	is.state, is.closedAt = "closed", now
	s.addEvent(is, c.login, "closed", "", "")
}

// pullRequestMergeRequest mirrors go-github's unexported request struct.
type pullRequestMergeRequest struct {
	CommitMessage *string `json:"commit_message,omitempty"`
	CommitTitle   string  `json:"commit_title,omitempty"`
	MergeMethod   string  `json:"merge_method,omitempty"`
	SHA           string  `json:"sha,omitempty"`
}

// mergePull performs a real merge in the bare repository.
// mergeCommit writes the merge (or squash) commit of a pull request, with
// GitHub's default title and message.
func (s *Server) mergeCommit(c *call, is *issue, req *pullRequestMergeRequest, baseTip, headTip plumbing.Hash, who object.Signature) (plumbing.Hash, error) {
	tree, err := mergedTree(c.repo, baseTip, headTip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	title, msg := req.CommitTitle, is.title
	if req.CommitMessage != nil {
		msg = *req.CommitMessage
	}
	parents := []plumbing.Hash{baseTip, headTip}
	if title == "" {
		title = fmt.Sprintf("Merge pull request #%d from %s/%s", is.number, s.owner, is.pull.head)
	}
	if req.MergeMethod == "squash" {
		parents = parents[:1]
		if req.CommitTitle == "" {
			title = fmt.Sprintf("%s (#%d)", is.title, is.number)
		}
	}
	full := title
	if msg != "" {
		full += "\n\n" + msg
	}
	return writeCommit(c.repo, tree, parents, full, who, who)
}

func (s *Server) mergePull(c *call, is *issue) {
	var req pullRequestMergeRequest
	if !decode(c, &req) {
		return
	}
	p := is.pull
	notMergeable := func(msg string) {
		writeError(c.w, http.StatusMethodNotAllowed, msg, "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request")
	}
	if is.state != "open" || p.merged {
		notMergeable("Pull Request is not mergeable")
		return
	}
	headTip, _ := branchTip(c.repo, p.head)
	baseTip, _ := branchTip(c.repo, p.base)
	if headTip.IsZero() || baseTip.IsZero() {
		notMergeable("Pull Request is not mergeable")
		return
	}
	if req.SHA != "" && req.SHA != headTip.String() {
		writeError(c.w, http.StatusConflict, "Head branch was modified. Review and try the merge again.", "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request")
		return
	}
	now := s.clock()
	who := signature(c.login, now)
	var result plumbing.Hash
	switch req.MergeMethod {
	case "", "merge", "squash":
		var err error
		result, err = s.mergeCommit(c, is, &req, baseTip, headTip, who)
		if errors.Is(err, errConflict) {
			notMergeable("Pull Request is not mergeable")
			return
		}
		if err != nil {
			writeError(c.w, http.StatusInternalServerError, err.Error(), "")
			return
		}
	case "rebase":
		// Simplification: only a fast-forward; GitHub would replay commits.
		if ff, _ := isAncestor(c.repo, baseTip, headTip); !ff {
			notMergeable("This branch can't be rebased")
			return
		}
		result = headTip
	default:
		validationFailed(c.w, github.Error{Resource: "PullRequest", Field: "merge_method", Code: "invalid"})
		return
	}
	stats := s.pullStats(c, p)
	if err := setBranch(c.repo, p.base, result, baseTip); err != nil {
		writeError(c.w, http.StatusConflict, "Base branch was modified. Review and try the merge again.", "")
		return
	}
	p.merged, p.mergedBy, p.mergedAt, p.mergeCommitSHA, p.headSHA, p.baseSHA, p.stats = true, c.login, now, result.String(), headTip.String(), baseTip.String(), stats
	is.state, is.closedAt, is.updatedAt = "closed", now, now
	s.addEvent(is, c.login, "merged", result.String(), "")
	s.addEvent(is, c.login, "closed", "", "")
	writeJSON(c.w, http.StatusOK, &github.PullRequestMergeResult{
		SHA:     github.String(result.String()),
		Merged:  github.Bool(true),
		Message: github.String("Pull Request successfully merged"),
	})
}

// ---- issues, labels, comments, events ----

func (s *Server) createIssue(c *call) {
	var req github.IssueRequest
	if !decode(c, &req) {
		return
	}
	switch {
	case req.GetTitle() == "":
		validationFailed(c.w, github.Error{Resource: "Issue", Field: "title", Code: "missing_field"})
		return
	case utf8.RuneCountInString(req.GetBody()) > maxBody:
		validationFailed(c.w, github.Error{Resource: "Issue", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	now := s.clock()
	is := &issue{number: s.nextNumber, id: s.newID(), title: req.GetTitle(), body: req.GetBody(),
		user: c.login, state: "open", createdAt: now, updatedAt: now}
	s.nextNumber++
	s.issues[is.number] = is
	if req.Labels != nil {
		s.addLabelsTo(is, c.login, *req.Labels)
	}
	out := s.issueJSON(is)
	c.w.Header().Set("Location", out["url"].(string))
	writeJSON(c.w, http.StatusCreated, out)
}

// addLabels accepts both shapes GitHub accepts: ["a","b"] (what go-github
// sends) and {"labels":["a","b"]}.
func (s *Server) addLabels(c *call, is *issue) {
	var names []string
	if err := json.Unmarshal(c.body, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if !decode(c, &obj) {
			return
		}
		names = obj.Labels
	}
	for _, n := range names {
		if n == "" || utf8.RuneCountInString(n) > 50 {
			validationFailed(c.w, github.Error{Resource: "Label", Field: "name", Code: "invalid"})
			return
		}
	}
	s.addLabelsTo(is, c.login, names)
	is.updatedAt = s.clock()
	writeJSON(c.w, http.StatusOK, s.labelsJSON(is.labels))
}

// requestReviewers is GitHub's "request reviewers for a pull request". As
// there, a review is requested from collaborators (known accounts with
// write access) and teams of the repository's owner only, never from the
// pull request's author, and a closed pull request takes none; a request
// already made is not repeated.
func (s *Server) requestReviewers(c *call, is *issue) {
	var body struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if !decode(c, &body) {
		return
	}
	if is.state != "open" {
		unprocessable(c.w, "Reviews may only be requested on open pull requests.")
		return
	}
	for _, login := range body.Reviewers {
		switch {
		case strings.EqualFold(login, is.user):
			unprocessable(c.w, "Review cannot be requested from pull request author.")
			return
		case s.accounts[strings.ToLower(login)] == nil || s.readOnly[strings.ToLower(login)]:
			unprocessable(c.w, "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+
				s.owner+"/"+s.name+" repository.")
			return
		}
	}
	for _, slug := range body.TeamReviewers {
		if s.teams[strings.ToLower(s.owner+"/"+slug)] == nil {
			unprocessable(c.w, "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+
				s.owner+"/"+s.name+" repository.")
			return
		}
	}
	p := is.pull
	for _, login := range body.Reviewers {
		if !slices.ContainsFunc(p.reviewers, func(r string) bool { return strings.EqualFold(r, login) }) {
			p.reviewers = append(p.reviewers, s.account(login).login)
		}
	}
	for _, slug := range body.TeamReviewers {
		if !slices.ContainsFunc(p.teamReviewers, func(r string) bool { return strings.EqualFold(r, slug) }) {
			p.teamReviewers = append(p.teamReviewers, strings.ToLower(slug))
		}
	}
	is.updatedAt = s.clock()
	writeJSON(c.w, http.StatusCreated, s.pullJSON(c, is, false))
}

func (s *Server) listComments(c *call, is *issue) {
	var since time.Time
	if v := c.r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			validationFailed(c.w, github.Error{Resource: "IssueComment", Field: "since", Code: "invalid"})
			return
		}
		since = t
	}
	var matching []*comment
	for _, cm := range is.comments {
		if !cm.at.Before(since) { // updated at or after since; comments here are never edited
			matching = append(matching, cm)
		}
	}
	list := []jsonObj{}
	for _, cm := range paginate(s, c, matching) {
		list = append(list, s.commentJSON(is, cm))
	}
	writeJSON(c.w, http.StatusOK, list)
}

func (s *Server) createComment(c *call, is *issue) {
	var req github.IssueComment
	if !decode(c, &req) {
		return
	}
	switch {
	case req.GetBody() == "":
		validationFailed(c.w, github.Error{Resource: "IssueComment", Field: "body", Code: "missing_field"})
		return
	case utf8.RuneCountInString(req.GetBody()) > maxBody:
		validationFailed(c.w, github.Error{Resource: "IssueComment", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	cm := &comment{id: s.newID(), body: req.GetBody(), user: c.login, at: s.clock()}
	is.comments = append(is.comments, cm)
	is.updatedAt = cm.at
	out := s.commentJSON(is, cm)
	c.w.Header().Set("Location", out["url"].(string))
	writeJSON(c.w, http.StatusCreated, out)
}

func (s *Server) listEvents(c *call, is *issue) {
	list := []jsonObj{}
	for _, e := range is.events {
		list = append(list, s.eventJSON(e))
	}
	writeJSON(c.w, http.StatusOK, paginate(s, c, list))
}

// ---- dispatch and teams ----

func (s *Server) dispatch(c *call) {
	var req github.DispatchRequestOptions
	if !decode(c, &req) {
		return
	}
	if req.EventType == "" || utf8.RuneCountInString(req.EventType) > 100 {
		unprocessable(c.w, "Invalid request.\n\nFor 'properties/event_type', must be a non-empty string of at most 100 characters.")
		return
	}
	payload := json.RawMessage("{}")
	if req.ClientPayload != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(*req.ClientPayload, &obj); err != nil || obj == nil {
			unprocessable(c.w, "Invalid request.\n\nFor 'properties/client_payload', is not an object.")
			return
		}
		if len(obj) > 10 {
			unprocessable(c.w, fmt.Sprintf("Invalid request.\n\nNo more than 10 properties are allowed; %d were supplied.", len(obj)))
			return
		}
		payload = bytes.Clone(*req.ClientPayload)
	}
	s.dispatches = append(s.dispatches, Dispatch{EventType: req.EventType, Payload: payload, Login: c.login})
	c.w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getTeam(c *call, org, slug string) {
	t := s.teams[strings.ToLower(org+"/"+slug)]
	if t == nil {
		notFound(c.w)
		return
	}
	writeJSON(c.w, http.StatusOK, s.teamJSON(org, slug, t))
}

func (s *Server) getMembership(c *call, org, slug, login string) {
	t := s.teams[strings.ToLower(org+"/"+slug)]
	if t == nil || t.members[strings.ToLower(login)] == "" {
		notFound(c.w)
		return
	}
	writeJSON(c.w, http.StatusOK, &github.Membership{
		URL:   github.String(s.apiURL("/orgs/%s/teams/%s/memberships/%s", org, slug, login)),
		State: github.String(t.members[strings.ToLower(login)]),
		Role:  github.String("member"),
	})
}
