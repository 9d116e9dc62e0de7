package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/sandbox"
)

// TestMain lets testscript run astra as a real process: the test binary
// re-executes itself as "astra", with main's signal handling.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"astra": func() { os.Exit(Main(os.Args[1:])) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Values[idpKey] = &scriptIDP{}
			// Tools in the scripts are files of the archive: make them executable.
			err := filepath.WalkDir(env.WorkDir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sh") {
					return os.Chmod(p, 0o755)
				}
				return err
			})
			if err != nil {
				return err
			}
			// astra runs in a git checkout: $WORK is one (nothing committed
			// yet; scripts commit what they need), and the person running
			// commands there is tester@example.com, whom a script's policies
			// may map to a login under identities:.
			for _, argv := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "tester@example.com"}, {"config", "user.name", "Tester"}} {
				if out, err := gittest.Run(env.WorkDir, argv...); err != nil {
					return fmt.Errorf("git %v: %v\n%s", argv, err, out)
				}
			}
			// Tools leave the traces scripts count in $SIDE_DIR, outside
			// every repository: their sandbox lets them write there and
			// nowhere else but their own HOME and TMPDIR (and, from tier
			// 1, the worktree, where what they do not declare is undone).
			side := env.WorkDir + "-side"
			if err := os.Mkdir(side, 0o755); err != nil {
				return err
			}
			env.Setenv("SIDE_DIR", side)
			env.Setenv("ASTRA_SANDBOX_WRITABLE", side)
			// Every ledger a script leaves is checked against the
			// published schema of ledger events.
			env.Defer(func() {
				if err := checkLedgerSchema(env.WorkDir); err != nil {
					env.T().Fatal(err)
				}
			})
			return setupScriptEnv(env)
		},
		Condition: func(cond string) (bool, error) {
			if cond == "landlock" {
				_, ok := sandbox.Available()
				return ok, nil
			}
			if cond == "tmpfs" { // a small filesystem of its own, in a mount namespace
				return exec.Command("unshare", "-rm", "sh", "-c", `d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"`).Run() == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"savetree":    saveTree,
			"checktree":   checkTree,
			"gitinit":     gitInit,
			"linecount":   lineCount,
			"truncatelog": truncateLog,
			"status":      exitStatus,
			"replace":     replaceIn,
			"parallel":    parallel,
			"waitfile":    waitFile,
			"uniquelines": uniqueLines,
			"hmacsign":    hmacSign,
			"signtrigger": signTrigger,
			"killruns":    killRuns,
			"closedport":  closedPort,
			"signjwt":     signJWT,
			"github":      scriptGitHubCmd,
			"approverkey": approverKey,
			"ledgerkey":   ledgerKeyCmd,
			"jwtissuer":   jwtIssuer,
			"signtoken":   signToken,
			"waitproc":    waitProc,
			"gone":        gone,
			"signal":      signalProcs,
			"forgeline":   forgeLine,
		},
	})
}

// treeDigest hashes every file under dir (paths, modes and contents), so a
// dry run can be shown to leave the tree byte-identical.
func treeDigest(dir string) (string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (d.Name() == ".tmp" || d.Name() == ".git") {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			lines = append(lines, fmt.Sprintf("%s/ %v", rel, info.Mode()))
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, info.Mode(), hex.EncodeToString(sum[:])))
		return nil
	})
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:]), err
}

// savetree NAME: remember the digest of $WORK under NAME.
func saveTree(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: savetree name")
	}
	d, err := treeDigest(ts.Getenv("WORK"))
	ts.Check(err)
	ts.Setenv("TREE_"+args[0], d)
}

// checktree NAME: $WORK is byte-identical to when NAME was saved.
func checkTree(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: checktree name")
	}
	d, err := treeDigest(ts.Getenv("WORK"))
	ts.Check(err)
	if same := d == ts.Getenv("TREE_"+args[0]); same == neg {
		ts.Fatalf("tree changed: %v (want unchanged: %v)", !same, !neg)
	}
}

// gitinit: make $WORK a git repository with everything committed.
func gitInit(ts *testscript.TestScript, neg bool, args []string) {
	for _, argv := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
		if out, err := gittest.Run(ts.Getenv("WORK"), argv...); err != nil {
			ts.Fatalf("git %v: %v\n%s", argv, err, out)
		}
	}
}

// linecount FILE N: FILE has exactly N lines (tools append to side files
// to prove how often they ran).
func lineCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: linecount file n")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	n := 0
	if err == nil {
		n = strings.Count(string(b), "\n")
	} else if !os.IsNotExist(err) {
		ts.Fatalf("%v", err)
	}
	if got := fmt.Sprint(n); (got == args[1]) == neg {
		ts.Fatalf("%s has %d lines, want %s%s", args[0], n, map[bool]string{true: "not "}[neg], args[1])
	}
}

// truncatelog FILE N: cut the last N bytes off FILE (a run killed while
// writing).
func truncateLog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: truncatelog file bytes")
	}
	p := ts.MkAbs(args[0])
	st, err := os.Stat(p)
	ts.Check(err)
	var n int64
	fmt.Sscan(args[1], &n)
	ts.Check(os.Truncate(p, st.Size()-n))
}

// status N PROG ARGS...: run PROG (like exec) and require exit status N;
// stdout and stderr are then checkable as after exec.
func exitStatus(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: status n prog args...")
	}
	err := ts.Exec(args[1], args[2:]...)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("%v", err)
	}
	if fmt.Sprint(code) != args[0] {
		ts.Logf("stdout:\n%s\nstderr:\n%s", ts.ReadFile("stdout"), ts.ReadFile("stderr"))
		ts.Fatalf("%s exited %d, want %s", args[1], code, args[0])
	}
}

// replace OLD NEW FILE: edit a file by hand, as a person might.
func replaceIn(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: replace old new file")
	}
	p := ts.MkAbs(args[2])
	b, err := os.ReadFile(p)
	ts.Check(err)
	if !strings.Contains(string(b), args[0]) {
		ts.Fatalf("%s does not contain %q", args[2], args[0])
	}
	ts.Check(os.WriteFile(p, []byte(strings.ReplaceAll(string(b), args[0], args[1])), 0o644))
}

// parallel N ARGS...: start N `astra --repo clone<i> ARGS...` processes at
// the same moment (clone1..cloneN); each must exit 0 or 3 (3: pushing gave
// up and the events went to a spill ref). Outputs land in out<i>.txt.
// Arguments may use {i} and {n} for the process number and count, and
// {shard4} for i mod 4 + 1.
func parallel(ts *testscript.TestScript, neg bool, args []string) {
	var n int
	if len(args) < 2 {
		ts.Fatalf("usage: parallel n args...")
	}
	fmt.Sscan(args[0], &n)
	env := []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "TMPDIR=" + ts.Getenv("TMPDIR"),
		"SIDE=" + ts.Getenv("SIDE"), "SIDE_DIR=" + ts.Getenv("SIDE_DIR"), "ASTRA_SANDBOX_WRITABLE=" + ts.Getenv("ASTRA_SANDBOX_WRITABLE"),
		"ASTRA_SANDBOX=" + ts.Getenv("ASTRA_SANDBOX"), "GIT_CONFIG_NOSYSTEM=1"}
	start := make(chan struct{})
	var wg sync.WaitGroup
	codes := make([]int, n)
	outs := make([][]byte, n)
	for i := range n {
		var argv []string
		for _, a := range append([]string{"--repo", "clone{i}"}, args[1:]...) {
			argv = append(argv, strings.NewReplacer("{i}", fmt.Sprint(i+1), "{n}", fmt.Sprint(n), "{shard4}", fmt.Sprint(i%4+1)).Replace(a))
		}
		cmd := exec.Command("astra", argv...)
		cmd.Dir, cmd.Env = ts.Getenv("WORK"), env
		if p, err := exec.LookPath(filepath.Join(firstPathWith(ts.Getenv("PATH"), "astra"), "astra")); err == nil {
			cmd.Path = p
		}
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
				buf.WriteString(err.Error())
			}
			outs[i] = buf.Bytes()
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		ts.Check(os.WriteFile(ts.MkAbs(fmt.Sprintf("out%d.txt", i+1)), outs[i], 0o644))
		if codes[i] != 0 && codes[i] != 3 {
			ts.Fatalf("runner %d exited %d:\n%s", i+1, codes[i], outs[i])
		}
		ts.Logf("runner %d exited %d", i+1, codes[i])
	}
}

func firstPathWith(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return dir
		}
	}
	return ""
}

// waitfile PATH: wait (up to 30 s) until PATH exists.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	for i := 0; i < 3000; i++ {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear", args[0])
}

// procsWith lists the pids of processes whose command line holds word
// as one of its arguments.
func procsWith(word string) []string {
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), word) {
			out = append(out, filepath.Base(filepath.Dir(f)))
		}
	}
	return out
}

// waitproc WORD: wait (up to 30 s) until a process runs with WORD as one of
// its arguments (a tool's daemon: sleep 3133701).
func waitProc(ts *testscript.TestScript, neg bool, args []string) {
	for i := 0; i < 3000; i++ {
		if len(procsWith(args[0])) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("no process with argument %s appeared", args[0])
}

// signal TERM|KILL WORD: send the signal to the processes with WORD as one
// of their arguments (an astra run started in the background with
// --only WORD).
func signalProcs(ts *testscript.TestScript, neg bool, args []string) {
	sig := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL}[args[0]]
	pids := procsWith(args[1])
	if sig == 0 || len(pids) == 0 {
		ts.Fatalf("signal %s %s: no such signal or process", args[0], args[1])
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		ts.Check(syscall.Kill(pid, sig))
	}
}

// gone WORD...: no process runs with any WORD as an argument, once the
// dying have died (a killed process is gone within a few seconds).
func gone(ts *testscript.TestScript, neg bool, args []string) {
	for i := 0; ; i++ {
		var left []string
		for _, w := range args {
			for _, pid := range procsWith(w) {
				if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(b[strings.LastIndexByte(string(b), ')')+1:]), " Z ") {
					left = append(left, pid+" ("+w+")")
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if i == 500 {
			ts.Fatalf("still running: %s", strings.Join(left, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// uniquelines FILE: no line of FILE appears twice.
func uniqueLines(ts *testscript.TestScript, neg bool, args []string) {
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		if seen[l] {
			ts.Fatalf("%s: %q appears twice", args[0], l)
		}
		seen[l] = true
	}
}

// hmacsign SECRET FILE VAR: set $VAR to the sha256=<hex> HMAC of FILE, as a
// system relaying events to astra would sign them.
func hmacSign(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: hmacsign secret file var")
	}
	ts.Setenv(args[2], executor.Sign([]byte(args[0]), []byte(ts.ReadFile(args[1]))))
}

// signtrigger SECRET EVENT FILE TIME VAR: set $VAR to the timestamped
// signature of EVENT with FILE as payload, made at TIME (scriptTime), as a
// system calling astra trigger would sign it.
func signTrigger(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 5 {
		ts.Fatalf("usage: signtrigger secret event file time var")
	}
	at, err := scriptTime(args[3])
	ts.Check(err)
	ts.Setenv(args[4], identity.SignTrigger([]byte(args[0]), args[1], []byte(ts.ReadFile(args[2])), at))
}

// closedport VAR: set $VAR to a local TCP port nothing listens on (a
// server that is down).
func closedPort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: closedport var")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Setenv(args[0], fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	ts.Check(l.Close())
}

// scriptTime reads a time of a script: RFC3339, or "now" on the machine's
// clock, which signatures and tokens are checked against, with an offset
// ("now-10m", "now+720h").
func scriptTime(s string) (time.Time, error) {
	rest, ok := strings.CutPrefix(s, "now")
	if !ok {
		return time.Parse(time.RFC3339, s)
	}
	if rest == "" {
		return time.Now(), nil
	}
	d, err := time.ParseDuration(rest)
	return time.Now().Add(d), err
}

// signjwt ISSUER AUDIENCE TIME VAR [LIFETIME [JTI]]: set $VAR to a JWT of
// ISSUER for AUDIENCE (subject "caller"), issued at TIME (scriptTime) and valid for LIFETIME (default 5m),
// with jti JTI (default a fresh one). It is signed by the key of the
// script's identity provider (jwtissuer) when ISSUER is its URL, else by
// a key of its own (kid "k1") that no key set holds.
func signJWT(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 4 || len(args) > 6 {
		ts.Fatalf("usage: signjwt issuer audience time var [lifetime [jti]]")
	}
	at, err := scriptTime(args[2])
	ts.Check(err)
	at = at.Truncate(time.Second)
	life := 5 * time.Minute
	if len(args) > 4 {
		var err error
		life, err = time.ParseDuration(args[4])
		ts.Check(err)
	}
	jti := fmt.Sprintf("jti-%d", time.Now().UnixNano())
	if len(args) > 5 {
		jti = args[5]
	}
	kid, key := "k1", any(nil)
	if p, _ := ts.Value(idpKey).(*scriptIDP); p != nil && p.url == args[0] {
		kid, key = "k2", p.key
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ts.Check(err)
		key = k
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	ts.Check(err)
	tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: args[0], Audience: jwt.Audience{args[1]}, Subject: "caller", ID: jti,
		IssuedAt: jwt.NewNumericDate(at), Expiry: jwt.NewNumericDate(at.Add(life))}).Serialize()
	ts.Check(err)
	ts.Setenv(args[3], tok)
}

// idpKey holds a script's identity provider (jwtissuer) in its values.
type idpKeyType struct{}

var idpKey idpKeyType

// scriptIDP is an identity provider a script started: its URL and key.
type scriptIDP struct {
	url string
	key *ecdsa.PrivateKey
}

// jwtissuer VAR: start an identity provider for this script, a real TLS
// server whose key set holds one key (kid "k2"); set $VAR to its URL (an
// issuer whose jwks_url is $VAR/keys) and make astra trust its
// certificate (SSL_CERT_FILE). signjwt signs for it.
func jwtIssuer(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: jwtissuer var")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k2", Algorithm: "ES256", Use: "sig"}}})
	ts.Check(err)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/keys" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(set)
	}))
	ts.Defer(srv.Close)
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	certFile := ts.MkAbs("idp-cert.pem")
	ts.Check(os.WriteFile(certFile, cert, 0o644))
	ts.Setenv("SSL_CERT_FILE", certFile)
	p, _ := ts.Value(idpKey).(*scriptIDP)
	if p == nil {
		ts.Fatalf("jwtissuer: no holder for the identity provider")
	}
	p.url, p.key = srv.URL, key
	ts.Setenv(args[0], srv.URL)
}

// approverkey LOGIN [FILE]: make LOGIN an SSH key with the real ssh-keygen
// ($WORK/keys/LOGIN and .pub) and, with FILE, list its public key for
// LOGIN under signing_keys there (the file is created with the section,
// or appended to).
func approverKey(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: approverkey login [policy file]")
	}
	key := ts.MkAbs(filepath.Join("keys", args[0]))
	ts.Check(os.MkdirAll(filepath.Dir(key), 0o700))
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", args[0], "-f", key).CombinedOutput(); err != nil {
		ts.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	if len(args) == 1 {
		return
	}
	pub, err := os.ReadFile(key + ".pub")
	ts.Check(err)
	p := ts.MkAbs(args[1])
	old, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("%v", err)
	}
	if len(old) == 0 {
		old = []byte("signing_keys:\n")
	}
	line := fmt.Sprintf("  %s: [%q]\n", args[0], strings.TrimSpace(string(pub)))
	ts.Check(os.WriteFile(p, append(old, line...), 0o644))
}

// signtoken KEY FILE: sign the approval token FILE with the SSH key KEY,
// as `astra approve` would (ssh-keygen -Y sign), whoever's key it is.
func signToken(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: signtoken key file")
	}
	tok, err := approval.Parse([]byte(ts.ReadFile(args[1])))
	ts.Check(err)
	s, err := approval.NewSigner(context.Background(), ts.MkAbs(args[0]))
	ts.Check(err)
	defer s.Close()
	ts.Check(s.Sign(context.Background(), tok))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), tok.Encode(), 0o644))
}
