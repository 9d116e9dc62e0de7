package githubtest

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ---- git data: blobs, trees, commits ----
//
// What a client builds a commit from without a checkout. The fake stores
// the objects in the bare repository, as GitHub does, so a ref made from
// them is a branch git can fetch.

// createBlobRequest mirrors go-github's Blob as it is sent.
type createBlobRequest struct {
	Content  *string `json:"content"`
	Encoding *string `json:"encoding"`
}

func (s *Server) createBlob(c *call) {
	var req createBlobRequest
	if !decode(c, &req) {
		return
	}
	if req.Content == nil {
		unprocessable(c.w, `Invalid request.

"content" wasn't supplied.`)
		return
	}
	data := []byte(*req.Content)
	switch enc := strings.ToLower(deref(req.Encoding)); enc {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(*req.Content); err != nil {
			unprocessable(c.w, "Invalid base64 content")
			return
		}
	default:
		unprocessable(c.w, "encoding must be utf-8 or base64")
		return
	}
	h, err := writeBlob(c.repo, data)
	if err != nil {
		serverError(c.w, err)
		return
	}
	url := s.repoAPI() + "/git/blobs/" + h.String()
	c.w.Header().Set("Location", url)
	writeJSON(c.w, http.StatusCreated, jsonObj{"url": url, "sha": h.String()})
}

// treeEntryRequest mirrors go-github's TreeEntry as it is sent.
type treeEntryRequest struct {
	Path    *string `json:"path"`
	Mode    *string `json:"mode"`
	Type    *string `json:"type"`
	SHA     *string `json:"sha"`
	Content *string `json:"content"`
	Size    *int    `json:"size"`
	URL     *string `json:"url"`
}

type createTreeRequest struct {
	BaseTree string             `json:"base_tree"`
	Tree     []treeEntryRequest `json:"tree"`
}

// createTree serves trees of blobs (what astra sends): modes 100644 and
// 100755, by sha or content; base_tree is not supported.
func (s *Server) createTree(c *call) {
	var req createTreeRequest
	if !decode(c, &req) {
		return
	}
	if req.BaseTree != "" {
		unprocessable(c.w, "the fake GitHub does not support base_tree")
		return
	}
	fs := files{}
	for _, e := range req.Tree {
		p, mode := deref(e.Path), filemode.Regular
		if deref(e.Mode) == "100755" {
			mode = filemode.Executable
		}
		if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "//") || deref(e.Type) != "blob" ||
			(deref(e.Mode) != "100644" && deref(e.Mode) != "100755") {
			unprocessable(c.w, "tree.path, tree.mode or tree.type is invalid")
			return
		}
		var h plumbing.Hash
		switch {
		case e.SHA != nil:
			h = plumbing.NewHash(*e.SHA)
			if _, err := c.repo.BlobObject(h); !plumbing.IsHash(*e.SHA) || err != nil {
				unprocessable(c.w, "tree.sha "+*e.SHA+" is not a valid blob")
				return
			}
		case e.Content != nil:
			var err error
			if h, err = writeBlob(c.repo, []byte(*e.Content)); err != nil {
				serverError(c.w, err)
				return
			}
		default:
			unprocessable(c.w, "tree entry "+p+" has neither sha nor content")
			return
		}
		fs[p] = entry{Hash: h, Mode: mode}
	}
	root, err := writeTree(c.repo, fs)
	if err != nil {
		unprocessable(c.w, "tree entries conflict: "+err.Error())
		return
	}
	tree := []jsonObj{}
	for p, e := range fs {
		tree = append(tree, jsonObj{"path": p, "mode": e.Mode.String()[1:], "type": "blob", "sha": e.Hash.String(),
			"url": s.repoAPI() + "/git/blobs/" + e.Hash.String()})
	}
	url := s.repoAPI() + "/git/trees/" + root.String()
	c.w.Header().Set("Location", url)
	writeJSON(c.w, http.StatusCreated, jsonObj{"sha": root.String(), "url": url, "truncated": false, "tree": tree})
}

// createCommitRequest mirrors go-github's unexported createCommit.
type createCommitRequest struct {
	Author    *commitAuthorRequest `json:"author"`
	Committer *commitAuthorRequest `json:"committer"`
	Message   *string              `json:"message"`
	Tree      *string              `json:"tree"`
	Parents   []string             `json:"parents"`
	Signature *string              `json:"signature"`
}

type commitAuthorRequest struct {
	Date  *string `json:"date"`
	Name  *string `json:"name"`
	Email *string `json:"email"`
	Login *string `json:"username"`
}

// createCommit makes the commit as the token's user, as GitHub does when
// no author is given.
func (s *Server) createCommit(c *call) {
	var req createCommitRequest
	if !decode(c, &req) {
		return
	}
	if req.Message == nil || req.Tree == nil {
		unprocessable(c.w, `Invalid request.

"message", "tree" weren't supplied.`)
		return
	}
	tree := plumbing.NewHash(*req.Tree)
	if _, err := c.repo.TreeObject(tree); !plumbing.IsHash(*req.Tree) || err != nil {
		unprocessable(c.w, "Tree SHA does not exist")
		return
	}
	var parents []plumbing.Hash
	for _, p := range req.Parents {
		h := plumbing.NewHash(p)
		if _, err := c.repo.CommitObject(h); !plumbing.IsHash(p) || err != nil {
			unprocessable(c.w, "Parent SHA does not exist or is not a commit object")
			return
		}
		parents = append(parents, h)
	}
	who := s.account(c.login)
	sig := object.Signature{Name: who.login, Email: who.login + "@users.noreply.example.com", When: s.clock()}
	if a := req.Author; a != nil && a.Name != nil && a.Email != nil {
		sig.Name, sig.Email = *a.Name, *a.Email
	}
	h, err := writeCommit(c.repo, tree, parents, *req.Message, sig, sig)
	if err != nil {
		serverError(c.w, err)
		return
	}
	ps := []jsonObj{}
	for _, p := range parents {
		ps = append(ps, jsonObj{"sha": p.String(), "url": s.repoAPI() + "/git/commits/" + p.String(), "html_url": s.repoHTML() + "/commit/" + p.String()})
	}
	person := jsonObj{"name": sig.Name, "email": sig.Email, "date": timeJSON(sig.When)}
	c.w.Header().Set("Location", s.repoAPI()+"/git/commits/"+h.String())
	writeJSON(c.w, http.StatusCreated, jsonObj{
		"sha":          h.String(),
		"node_id":      "C_fake" + h.String()[:12],
		"url":          s.repoAPI() + "/git/commits/" + h.String(),
		"html_url":     s.repoHTML() + "/commit/" + h.String(),
		"author":       person,
		"committer":    person,
		"message":      *req.Message,
		"tree":         jsonObj{"sha": tree.String(), "url": s.repoAPI() + "/git/trees/" + tree.String()},
		"parents":      ps,
		"verification": jsonObj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
	})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func serverError(w http.ResponseWriter, err error) {
	writeError(w, http.StatusInternalServerError, err.Error(), "")
}
