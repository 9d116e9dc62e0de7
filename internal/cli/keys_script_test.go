package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/seal"
)

// ledgerkey POLICYFILE: make the script's repository keyed, cheaply: a
// new ledger key, its private half in $WORK/ledger.key (outside every
// repository) and named by ASTRA_LEDGER_KEY_FILE for the rest of the
// script (`env ASTRA_LEDGER_KEY_FILE=` takes it away, as from a job
// without the secret), its public half listed under trust.ledger_keys in
// POLICYFILE. A trust: section already in POLICYFILE must be its last.
func ledgerKeyCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: ledgerkey policyfile")
	}
	priv, pub, err := seal.Generate("astra ledger key (test)")
	ts.Check(err)
	file := ts.MkAbs("ledger.key")
	ts.Check(os.WriteFile(file, priv, 0o600))
	ts.Setenv(ledgerkey.EnvKeyFile, file)
	p := ts.MkAbs(args[0])
	old, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("%v", err)
	}
	if !bytes.Contains(old, []byte("\ntrust:\n")) && !bytes.HasPrefix(old, []byte("trust:\n")) {
		old = append(old, "trust:\n"...)
	}
	line := fmt.Sprintf("  ledger_keys: [%q]\n", strings.TrimSpace(pub.String()))
	ts.Check(os.WriteFile(p, append(old, line...), 0o644))
}
