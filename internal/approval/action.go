package approval

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/astra-gitops/astra/internal/buildinfo"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

// An approval approves an action: exactly what will run, not only which
// schedule. Its hash covers components, each hashed on its own so that a
// refusal can say which one changed:
//
//   - tool: the resolved tool entry (how it runs, what it may touch, its
//     tier, capabilities and risk), and whether the action is the run or
//     the tool's rollback;
//   - files: the git blob id of every repository file the tool runs or
//     loads (ToolFiles: the directory of each script its command or
//     rollback names, and its files: globs);
//   - payload: the payload and the triggering event (PayloadHash);
//   - actor: the actor the run acts as, its scopes and its autonomy;
//   - schedule: the schedule's definition hash;
//   - astra: astra's version.
const (
	CompTool     = "tool"
	CompFiles    = "files"
	CompPayload  = "payload"
	CompActor    = "actor"
	CompSchedule = "schedule"
	CompAstra    = "astra"
)

// components in the order messages and pull requests name them.
var components = []string{CompTool, CompFiles, CompPayload, CompActor, CompSchedule, CompAstra}

// maxToolFile bounds what is hashed of one tool file: a script or a
// binary committed to the repository, never more.
const maxToolFile = 512 << 20

// Action is an action's hash, the hash of each component, and what the
// components that are not hashes of hashes say in plain words: the blob
// id of each file and astra's version.
type Action struct {
	Hash       string            `json:"hash"`
	Components map[string]string `json:"components"`
	Files      map[string]string `json:"files,omitempty"` // repository path -> git blob id
	Version    string            `json:"version,omitempty"`
}

// Subject is what an action is computed from.
type Subject struct {
	Root       string // the repository
	Schedule   *model.Schedule
	Tool       *model.Tool
	Actor      *model.Actor    // the actor entry the schedule's actor resolves to; nil when none
	Event      json.RawMessage // the triggering event, as the tool gets it
	Definition string          // the schedule's definition hash
	Rollback   bool            // the action is the tool's compensating command
	Version    string          // astra's version; "" means this build's
}

// toolEntry is the part of a tool entry that says what runs and what it
// may do; its description and runner labels are left out.
type toolEntry struct {
	Kind               string            `json:"kind"`
	Run                string            `json:"run"` // "run" or "rollback"
	Command            []string          `json:"command,omitempty"`
	URL                string            `json:"url,omitempty"`
	Method             string            `json:"method,omitempty"`
	Headers            map[string]string `json:"headers,omitempty"`
	Env                []string          `json:"env,omitempty"`
	SignatureSecretEnv string            `json:"signature_secret_env,omitempty"`
	Action             string            `json:"action,omitempty"`
	Rollback           []string          `json:"rollback,omitempty"`
	Writes             []string          `json:"writes,omitempty"`
	Tier               model.Tier        `json:"tier"`
	Capabilities       []string          `json:"capabilities,omitempty"`
	Idempotent         bool              `json:"idempotent"`
	RequiresApproval   bool              `json:"requires_approval"`
	RiskLevel          model.Risk        `json:"risk_level"`
}

// Compute works out s's action. A file the tool runs that cannot be read
// as a repository file (a symlink out of the repository, one too large)
// is an error: what cannot be bound cannot be approved.
func Compute(s Subject) (Action, error) {
	t, sc := s.Tool, s.Schedule
	if t == nil || sc == nil {
		return Action{}, errors.New("no tool to bind")
	}
	run := "run"
	if s.Rollback {
		run = "rollback"
	}
	entry := toolEntry{Kind: t.Kind, Run: run, Command: t.Command, URL: t.URL, Method: t.Method, Headers: t.Headers, Env: t.Env,
		SignatureSecretEnv: t.SignatureSecretEnv, Action: t.Action, Rollback: t.Rollback, Writes: t.Writes, Tier: t.Tier,
		Capabilities: t.Capabilities, Idempotent: t.Idempotent, RequiresApproval: t.RequiresApproval, RiskLevel: t.RiskLevel}
	files := map[string]string{}
	bound, _, err := ToolFiles(s.Root, t)
	if err != nil {
		return Action{}, fmt.Errorf("what tool %s runs cannot be bound to an approval: %w", t.Name, err)
	}
	for _, p := range bound {
		if files[p], err = blobOf(s.Root, p); err != nil {
			return Action{}, err
		}
	}
	actor := struct {
		Name     string   `json:"name"`
		Entry    string   `json:"entry,omitempty"` // the pattern that matched
		Scopes   []string `json:"scopes"`
		Autonomy string   `json:"autonomy"`
	}{Name: sc.Actor, Autonomy: sc.Autonomy.Short()}
	if s.Actor != nil {
		actor.Entry, actor.Scopes = s.Actor.Pattern, s.Actor.Scopes
	}
	version := s.Version
	if version == "" {
		version = Version()
	}
	a := Action{Files: files, Version: version, Components: map[string]string{
		CompTool:     hashJSON(entry),
		CompFiles:    hashJSON(files),
		CompPayload:  PayloadHash(sc.Payload, s.Event),
		CompActor:    hashJSON(actor),
		CompSchedule: s.Definition,
		CompAstra:    hashJSON(version),
	}}
	a.Hash = hashJSON(a.Components)
	if len(files) == 0 {
		a.Files = nil
	}
	return a, nil
}

// Version is the astra version an action binds: the release, or for a
// build from source its commit (and whether it was modified).
func Version() string {
	i := buildinfo.Get()
	v := i.Version
	if !buildinfo.IsRelease(v) && i.Commit != "" {
		v += "+" + i.Commit
		if i.Modified {
			v += ".modified"
		}
	}
	return v
}

// blobOf is the git blob id of repository file slash.
func blobOf(root, slash string) (string, error) {
	f, err := repofs.Open(root, slash)
	if err != nil {
		return "", fmt.Errorf("the tool runs %s, which astra cannot bind to the approval: %w", slash, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Size() > maxToolFile {
		return "", fmt.Errorf("the tool runs %s, larger than the %d MB astra binds to an approval", slash, maxToolFile>>20)
	}
	h := sha1.New() // git's object id; sha1 is what git names blobs by
	h.Write([]byte("blob " + strconv.FormatInt(fi.Size(), 10) + "\x00"))
	if n, err := io.Copy(h, io.LimitReader(f, fi.Size()+1)); err != nil || n != fi.Size() {
		return "", fmt.Errorf("reading %s to bind it to the approval: it changed while read (%v)", slash, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BlobID is git's object id of a file holding data.
func BlobID(data []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain data; the loader only accepts JSON-compatible values
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Changes says, in plain words, what differs between the action that was
// approved and the action now, component by component; nil when they are
// the same. An approval recorded without its components (by an older
// astra) differs as a whole.
func Changes(approved, now Action) []string {
	if approved.Hash == now.Hash {
		return nil
	}
	if len(approved.Components) == 0 {
		return []string{"the approval does not record what it approved (made by an older astra)"}
	}
	var out []string
	for _, c := range components {
		if approved.Components[c] == now.Components[c] {
			continue
		}
		switch c {
		case CompTool:
			out = append(out, "the tool's entry in policies changed")
		case CompFiles:
			out = append(out, fileChanges(approved.Files, now.Files)...)
		case CompPayload:
			out = append(out, "the payload or event changed")
		case CompActor:
			out = append(out, "the actor, its scopes or its autonomy changed")
		case CompSchedule:
			out = append(out, "the schedule's definition changed")
		case CompAstra:
			out = append(out, fmt.Sprintf("astra changed (%s→%s)", orUnknown(approved.Version), orUnknown(now.Version)))
		}
	}
	if len(out) == 0 {
		out = append(out, "the action changed")
	}
	return out
}

func fileChanges(before, after map[string]string) []string {
	var paths []string
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		b, a := before[p], after[p]
		switch {
		case b == a:
		case b == "":
			out = append(out, fmt.Sprintf("%s is now run too (blob %s)", p, Short(a)))
		case a == "":
			out = append(out, fmt.Sprintf("%s is no longer a repository file the tool runs", p))
		default:
			out = append(out, fmt.Sprintf("%s changed (blob %s→%s)", p, Short(b), Short(a)))
		}
	}
	if len(out) == 0 {
		out = append(out, "the files the tool runs changed")
	}
	return out
}

// Short is a blob id as git abbreviates it.
func Short(blob string) string {
	if len(blob) > 7 {
		return blob[:7]
	}
	return blob
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// WithVersionOf is a with b's astra version in place of its own, so that
// two actions compare on everything else.
func (a Action) WithVersionOf(b Action) Action {
	c := make(map[string]string, len(a.Components))
	for k, v := range a.Components {
		c[k] = v
	}
	c[CompAstra] = b.Components[CompAstra]
	a.Components, a.Version = c, b.Version
	a.Hash = hashJSON(c)
	return a
}

// Encode is the action's JSON, for the ledger's detail.
func (a Action) Encode() json.RawMessage {
	b, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return b
}

// DecodeAction reads an action from the ledger's detail; an empty or
// unreadable one is the zero Action, which matches nothing.
func DecodeAction(raw json.RawMessage) Action {
	var a Action
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &a)
	}
	return a
}
