package githubtest

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v60/github"
)

// The JSON the fake answers with. GitHub sends every property its
// description marks required, with null for "none" (a pull request's
// milestone, a label's description); go-github's types leave empty
// properties out, so the shapes are built as maps, in the order of GitHub's
// documented examples. The conformance test checks them against the
// description.

type jsonObj = map[string]any

func (s *Server) apiURL(p string, args ...any) string {
	return s.URL + fmt.Sprintf(p, args...)
}

func (s *Server) repoAPI() string { return s.apiURL("/repos/%s/%s", s.owner, s.name) }

func (s *Server) repoHTML() string { return s.URL + "/" + s.owner + "/" + s.name }

func nodeID(kind string, id int64) string { return fmt.Sprintf("%s_fake%d", kind, id) }

// timeJSON is a timestamp as GitHub writes it; null when unset.
func timeJSON(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// textJSON is a body or description: GitHub sends null rather than "".
func textJSON(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// escapePath escapes each segment of a repository path for a URL.
func escapePath(p string) string {
	seg := strings.Split(p, "/")
	for i := range seg {
		seg[i] = url.PathEscape(seg[i])
	}
	return strings.Join(seg, "/")
}

// userJSON is a simple-user.
func (s *Server) userJSON(login string) jsonObj {
	a := s.account(login)
	api := s.URL + "/users/" + url.PathEscape(a.login)
	html := s.URL + "/" + url.PathEscape(a.login)
	if a.typ == "Bot" {
		html = s.URL + "/apps/" + url.PathEscape(strings.TrimSuffix(a.login, "[bot]"))
	}
	return jsonObj{
		"login":               a.login,
		"id":                  a.id,
		"node_id":             nodeID("U", a.id),
		"avatar_url":          fmt.Sprintf("%s/avatars/u/%d?v=4", s.URL, a.id),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            html,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                a.typ,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

// association is the author_association of login's issues and comments.
func (s *Server) association(login string) string {
	if s.account(login).typ == "Bot" || s.readOnly[strings.ToLower(login)] {
		return "NONE"
	}
	return "MEMBER"
}

// repoURLs are the API links of a repository object, relative to its URL.
var repoURLs = map[string]string{
	"forks_url":         "/forks",
	"keys_url":          "/keys{/key_id}",
	"collaborators_url": "/collaborators{/collaborator}",
	"teams_url":         "/teams",
	"hooks_url":         "/hooks",
	"issue_events_url":  "/issues/events{/number}",
	"events_url":        "/events",
	"assignees_url":     "/assignees{/user}",
	"branches_url":      "/branches{/branch}",
	"tags_url":          "/tags",
	"blobs_url":         "/git/blobs{/sha}",
	"git_tags_url":      "/git/tags{/sha}",
	"git_refs_url":      "/git/refs{/sha}",
	"trees_url":         "/git/trees{/sha}",
	"statuses_url":      "/statuses/{sha}",
	"languages_url":     "/languages",
	"stargazers_url":    "/stargazers",
	"contributors_url":  "/contributors",
	"subscribers_url":   "/subscribers",
	"subscription_url":  "/subscription",
	"commits_url":       "/commits{/sha}",
	"git_commits_url":   "/git/commits{/sha}",
	"comments_url":      "/comments{/number}",
	"issue_comment_url": "/issues/comments{/number}",
	"contents_url":      "/contents/{+path}",
	"compare_url":       "/compare/{base}...{head}",
	"merges_url":        "/merges",
	"archive_url":       "/{archive_format}{/ref}",
	"downloads_url":     "/downloads",
	"issues_url":        "/issues{/number}",
	"pulls_url":         "/pulls{/number}",
	"milestones_url":    "/milestones{/number}",
	"notifications_url": "/notifications{?since,all,participating}",
	"labels_url":        "/labels{/name}",
	"releases_url":      "/releases{/id}",
	"deployments_url":   "/deployments",
}

// repoJSON is the repository as the user of c sees it: a repository
// (inside pull requests), or with full a full-repository (GET /repos/o/r).
// Its clone_url is the bare repository's file:// URL.
func (s *Server) repoJSON(c *call, full bool) jsonObj {
	write := !s.readOnly[strings.ToLower(c.login)]
	host := strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://")
	open := 0
	for _, is := range s.issues {
		if is.state == "open" {
			open++
		}
	}
	pushed, _ := branchTip(c.repo, s.defaultBranch)
	pushedAt := s.created
	if co, err := c.repo.CommitObject(pushed); err == nil {
		pushedAt = co.Committer.When
	}
	o := jsonObj{
		"id":                          int64(4242),
		"node_id":                     "R_fake",
		"name":                        s.name,
		"full_name":                   s.owner + "/" + s.name,
		"owner":                       s.userJSON(s.owner),
		"private":                     true,
		"html_url":                    s.repoHTML(),
		"description":                 nil,
		"fork":                        false,
		"url":                         s.repoAPI(),
		"created_at":                  timeJSON(s.created),
		"updated_at":                  timeJSON(pushedAt),
		"pushed_at":                   timeJSON(pushedAt),
		"git_url":                     "git://" + host + "/" + s.owner + "/" + s.name + ".git",
		"ssh_url":                     "git@" + host + ":" + s.owner + "/" + s.name + ".git",
		"clone_url":                   "file://" + s.dir,
		"svn_url":                     s.repoHTML(),
		"homepage":                    nil,
		"size":                        0,
		"stargazers_count":            0,
		"watchers_count":              0,
		"language":                    nil,
		"has_issues":                  true,
		"has_projects":                false,
		"has_downloads":               true,
		"has_wiki":                    false,
		"has_pages":                   false,
		"has_discussions":             false,
		"forks_count":                 0,
		"mirror_url":                  nil,
		"archived":                    false,
		"disabled":                    false,
		"open_issues_count":           open,
		"license":                     nil,
		"allow_forking":               false,
		"is_template":                 false,
		"web_commit_signoff_required": false,
		"topics":                      []string{},
		"visibility":                  "private",
		"forks":                       0,
		"open_issues":                 open,
		"watchers":                    0,
		"default_branch":              s.defaultBranch,
		"permissions":                 jsonObj{"admin": false, "maintain": false, "push": write, "triage": write, "pull": true},
	}
	for k, v := range repoURLs {
		o[k] = s.repoAPI() + v
	}
	if full {
		o["network_count"] = 0
		o["subscribers_count"] = 0
	}
	return o
}

// refJSON is a git-ref; go-github's type carries all of it.
func (s *Server) refJSON(name string, h plumbing.Hash) *github.Reference {
	return &github.Reference{
		Ref:    github.String(name),
		URL:    github.String(s.repoAPI() + "/git/" + escapePath(name)),
		NodeID: github.String("REF_fake"),
		Object: &github.GitObject{
			Type: github.String("commit"),
			SHA:  github.String(h.String()),
			URL:  github.String(s.repoAPI() + "/git/commits/" + h.String()),
		},
	}
}

// contentJSON is a file, directory, symlink or submodule entry of the
// contents API at ref (typ "file", "dir", "symlink", "submodule").
func (s *Server) contentJSON(p, typ string, sha plumbing.Hash, size int, ref string) jsonObj {
	self := s.repoAPI() + "/contents/" + escapePath(p) + "?ref=" + url.QueryEscape(ref)
	git := s.repoAPI() + "/git/blobs/" + sha.String()
	html := s.repoHTML() + "/blob/" + escapePath(ref) + "/" + escapePath(p)
	var download any = s.URL + "/raw/" + s.owner + "/" + s.name + "/" + escapePath(ref) + "/" + escapePath(p)
	switch typ {
	case "dir":
		git = s.repoAPI() + "/git/trees/" + sha.String()
		html = s.repoHTML() + "/tree/" + escapePath(ref) + "/" + escapePath(p)
		download = nil
	case "submodule":
		git = s.repoAPI() + "/git/trees/" + sha.String()
		download = nil
	}
	return jsonObj{
		"type":         typ,
		"name":         p[strings.LastIndex(p, "/")+1:],
		"path":         p,
		"sha":          sha.String(),
		"size":         size,
		"url":          self,
		"git_url":      git,
		"html_url":     html,
		"download_url": download,
		"_links":       jsonObj{"self": self, "git": git, "html": html},
	}
}

func (s *Server) labelJSON(l *label) jsonObj {
	return jsonObj{
		"id":          l.id,
		"node_id":     nodeID("LA", l.id),
		"url":         s.repoAPI() + "/labels/" + url.PathEscape(l.name),
		"name":        l.name,
		"color":       l.color,
		"default":     false,
		"description": nil,
	}
}

func (s *Server) labelsJSON(names []string) []jsonObj {
	out := []jsonObj{}
	for _, n := range names {
		out = append(out, s.labelJSON(s.labels[strings.ToLower(n)]))
	}
	return out
}

func (s *Server) issueAPI(number int) string { return fmt.Sprintf("%s/issues/%d", s.repoAPI(), number) }

func (s *Server) issueHTML(is *issue) string {
	if is.pull != nil {
		return fmt.Sprintf("%s/pull/%d", s.repoHTML(), is.number)
	}
	return fmt.Sprintf("%s/issues/%d", s.repoHTML(), is.number)
}

// issueJSON is an issue (or a pull request seen as an issue).
func (s *Server) issueJSON(is *issue) jsonObj {
	api := s.issueAPI(is.number)
	o := jsonObj{
		"id":                       is.id,
		"node_id":                  nodeID("I", is.id),
		"url":                      api,
		"repository_url":           s.repoAPI(),
		"labels_url":               api + "/labels{/name}",
		"comments_url":             api + "/comments",
		"events_url":               api + "/events",
		"html_url":                 s.issueHTML(is),
		"number":                   is.number,
		"state":                    is.state,
		"state_reason":             nil,
		"title":                    is.title,
		"body":                     textJSON(is.body),
		"user":                     s.userJSON(is.user),
		"labels":                   s.labelsJSON(is.labels),
		"assignee":                 nil,
		"assignees":                []jsonObj{},
		"milestone":                nil,
		"locked":                   false,
		"active_lock_reason":       nil,
		"comments":                 len(is.comments),
		"closed_at":                timeJSON(is.closedAt),
		"created_at":               timeJSON(is.createdAt),
		"updated_at":               timeJSON(is.updatedAt),
		"author_association":       s.association(is.user),
		"performed_via_github_app": nil,
		"timeline_url":             api + "/timeline",
	}
	if p := is.pull; p != nil {
		html := s.issueHTML(is)
		o["pull_request"] = jsonObj{
			"url":       fmt.Sprintf("%s/pulls/%d", s.repoAPI(), is.number),
			"html_url":  html,
			"diff_url":  html + ".diff",
			"patch_url": html + ".patch",
			"merged_at": timeJSON(p.mergedAt),
		}
		o["draft"] = p.draft
	}
	return o
}

// pullJSON is a pull-request, or without full a pull-request-simple (the
// items of a list, which leave out merge state and diff statistics).
func (s *Server) pullJSON(c *call, is *issue, full bool) jsonObj {
	p := is.pull
	api := fmt.Sprintf("%s/pulls/%d", s.repoAPI(), is.number)
	html := s.issueHTML(is)
	issueAPI := s.issueAPI(is.number)
	headSHA := p.headSHA
	if is.state == "open" {
		if h, _ := branchTip(c.repo, p.head); !h.IsZero() {
			headSHA = h.String()
		}
	}
	baseTip, _ := branchTip(c.repo, p.base)
	repo := s.repoJSON(c, false)
	branch := func(ref, sha string) jsonObj {
		return jsonObj{"label": s.owner + ":" + ref, "ref": ref, "sha": sha, "user": s.userJSON(s.owner), "repo": repo}
	}
	link := func(href string) jsonObj { return jsonObj{"href": href} }
	var mergeSHA any
	if p.merged {
		mergeSHA = p.mergeCommitSHA
	}
	o := jsonObj{
		"url":                 api,
		"id":                  is.id,
		"node_id":             nodeID("PR", is.id),
		"html_url":            html,
		"diff_url":            html + ".diff",
		"patch_url":           html + ".patch",
		"issue_url":           issueAPI,
		"commits_url":         api + "/commits",
		"review_comments_url": api + "/comments",
		"review_comment_url":  s.repoAPI() + "/pulls/comments{/number}",
		"comments_url":        issueAPI + "/comments",
		"statuses_url":        s.repoAPI() + "/statuses/" + headSHA,
		"number":              is.number,
		"state":               is.state,
		"locked":              false,
		"title":               is.title,
		"user":                s.userJSON(is.user),
		"body":                textJSON(is.body),
		"labels":              s.labelsJSON(is.labels),
		"milestone":           nil,
		"active_lock_reason":  nil,
		"created_at":          timeJSON(is.createdAt),
		"updated_at":          timeJSON(is.updatedAt),
		"closed_at":           timeJSON(is.closedAt),
		"merged_at":           timeJSON(p.mergedAt),
		"merge_commit_sha":    mergeSHA,
		"assignee":            nil,
		"assignees":           []jsonObj{},
		"requested_reviewers": s.reviewersJSON(p.reviewers),
		"requested_teams":     s.requestedTeamsJSON(p.teamReviewers),
		"head":                branch(p.head, headSHA),
		"base":                branch(p.base, baseTip.String()),
		"_links": jsonObj{
			"self":            link(api),
			"html":            link(html),
			"issue":           link(issueAPI),
			"comments":        link(issueAPI + "/comments"),
			"review_comments": link(api + "/comments"),
			"review_comment":  link(s.repoAPI() + "/pulls/comments{/number}"),
			"commits":         link(api + "/commits"),
			"statuses":        link(s.repoAPI() + "/statuses/" + headSHA),
		},
		"author_association": s.association(is.user),
		"auto_merge":         nil,
		"draft":              p.draft,
	}
	if !full {
		return o
	}
	// GitHub computes mergeability only for open pull requests.
	var mergeable, rebaseable any
	state := "unknown"
	if is.state == "open" {
		ok := s.mergeable(c, p)
		mergeable, state = ok, "clean"
		if !ok {
			state = "dirty"
		}
		head, _ := branchTip(c.repo, p.head)
		ff, _ := isAncestor(c.repo, baseTip, head)
		rebaseable = ff
	}
	var mergedBy any
	if p.merged {
		mergedBy = s.userJSON(p.mergedBy)
	}
	st := p.stats
	if st == nil || is.state == "open" {
		st = s.pullStats(c, p)
	}
	o["merged"] = p.merged
	o["mergeable"] = mergeable
	o["rebaseable"] = rebaseable
	o["mergeable_state"] = state
	o["merged_by"] = mergedBy
	o["comments"] = len(is.comments)
	o["review_comments"] = 0
	o["maintainer_can_modify"] = p.maintainerMod
	o["commits"] = st.commits
	o["additions"] = st.additions
	o["deletions"] = st.deletions
	o["changed_files"] = st.files
	return o
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

// pullStats compares the pull request's head with its base (from their
// merge base, as GitHub does).
func (s *Server) pullStats(c *call, p *pull) *diffStats {
	head, _ := branchTip(c.repo, p.head)
	if head.IsZero() {
		head = plumbing.NewHash(p.headSHA)
	}
	base, _ := branchTip(c.repo, p.base)
	st, err := compare(c.repo, base, head)
	if err != nil {
		return &diffStats{}
	}
	return st
}

func (s *Server) commentJSON(is *issue, cm *comment) jsonObj {
	return jsonObj{
		"id":                       cm.id,
		"node_id":                  nodeID("IC", cm.id),
		"url":                      fmt.Sprintf("%s/issues/comments/%d", s.repoAPI(), cm.id),
		"html_url":                 fmt.Sprintf("%s#issuecomment-%d", s.issueHTML(is), cm.id),
		"issue_url":                s.issueAPI(is.number),
		"body":                     cm.body,
		"user":                     s.userJSON(cm.user),
		"created_at":               timeJSON(cm.at),
		"updated_at":               timeJSON(cm.at),
		"author_association":       s.association(cm.user),
		"performed_via_github_app": nil,
	}
}

// eventJSON is an issue event: GitHub's labeled-issue-event, or a
// state-change-issue-event for closed, reopened and merged.
func (s *Server) eventJSON(e *event) jsonObj {
	o := jsonObj{
		"id":                       e.id,
		"node_id":                  nodeID("E", e.id),
		"url":                      fmt.Sprintf("%s/issues/events/%d", s.repoAPI(), e.id),
		"actor":                    s.userJSON(e.actor),
		"event":                    e.event,
		"commit_id":                nil,
		"commit_url":               nil,
		"created_at":               timeJSON(e.at),
		"performed_via_github_app": nil,
	}
	if e.commit != "" {
		o["commit_id"] = e.commit
		o["commit_url"] = s.repoAPI() + "/commits/" + e.commit
	}
	switch e.event {
	case "labeled":
		l := s.labels[strings.ToLower(e.label)]
		o["label"] = jsonObj{"name": l.name, "color": l.color}
	case "closed", "reopened":
		o["state_reason"] = nil
	}
	return o
}

// orgJSON is a team's organization (team-organization).
func (s *Server) orgJSON(org string) jsonObj {
	a := s.account(org)
	api := s.URL + "/orgs/" + url.PathEscape(a.login)
	return jsonObj{
		"login":                     a.login,
		"id":                        a.id,
		"node_id":                   nodeID("O", a.id),
		"url":                       api,
		"repos_url":                 api + "/repos",
		"events_url":                api + "/events",
		"hooks_url":                 api + "/hooks",
		"issues_url":                api + "/issues",
		"members_url":               api + "/members{/member}",
		"public_members_url":        api + "/public_members{/member}",
		"avatar_url":                fmt.Sprintf("%s/avatars/u/%d?v=4", s.URL, a.id),
		"description":               nil,
		"html_url":                  s.URL + "/" + url.PathEscape(a.login),
		"has_organization_projects": false,
		"has_repository_projects":   false,
		"public_repos":              0,
		"public_gists":              0,
		"followers":                 0,
		"following":                 0,
		"type":                      "Organization",
		"created_at":                timeJSON(s.created),
		"updated_at":                timeJSON(s.created),
		"archived_at":               nil,
	}
}

func (s *Server) reviewersJSON(logins []string) []jsonObj {
	out := []jsonObj{}
	for _, l := range logins {
		out = append(out, s.userJSON(l))
	}
	return out
}

// requestedTeamsJSON are teams of the repository's owner as a pull
// request lists them (GitHub's "team" schema: team-full less its counts,
// dates and organization).
func (s *Server) requestedTeamsJSON(slugs []string) []jsonObj {
	out := []jsonObj{}
	for _, slug := range slugs {
		o := s.teamJSON(s.owner, slug, s.teams[strings.ToLower(s.owner+"/"+slug)])
		for _, k := range []string{"members_count", "repos_count", "created_at", "updated_at", "organization"} {
			delete(o, k)
		}
		out = append(out, o)
	}
	return out
}

// teamJSON is a team-full.
func (s *Server) teamJSON(org, slug string, t *team) jsonObj {
	api := s.URL + "/orgs/" + url.PathEscape(org) + "/teams/" + url.PathEscape(slug)
	active := 0
	for _, state := range t.members {
		if state == "active" {
			active++
		}
	}
	return jsonObj{
		"id":                   t.id,
		"node_id":              nodeID("T", t.id),
		"url":                  api,
		"html_url":             s.URL + "/orgs/" + url.PathEscape(org) + "/teams/" + url.PathEscape(slug),
		"name":                 slug,
		"slug":                 slug,
		"description":          nil,
		"privacy":              "closed",
		"notification_setting": "notifications_enabled",
		"permission":           "pull",
		"members_url":          api + "/members{/member}",
		"repositories_url":     api + "/repos",
		"parent":               nil,
		"members_count":        active,
		"repos_count":          0,
		"created_at":           timeJSON(t.created),
		"updated_at":           timeJSON(t.created),
		"organization":         s.orgJSON(org),
		"type":                 "organization",
	}
}
