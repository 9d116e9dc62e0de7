package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/astra-gitops/astra/internal/model"
)

// FieldChange is one setting a schedule.updated changed. Old and New are
// left out for settings whose values the ledger must not show (the
// payload, a webhook URL) or that are too long to repeat.
type FieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old,omitempty"`
	New   string `json:"new,omitempty"`
}

// secretSettings are recorded by hash only: their values may carry
// credentials, and the ledger is committed to the repository.
var secretSettings = map[string]bool{"payload": true, "result_route.webhook": true}

// maxSettingLen is the longest value kept as is; longer ones (a
// description) are kept by hash, which is enough to see that they changed.
const maxSettingLen = 80

// hashedPrefix marks a value kept by hash.
const hashedPrefix = "sha256:"

// settingsOf flattens a schedule's resolved definition into dotted names
// and their values, as state keeps them to tell the next schedule.updated
// what changed. Zero values are left out to keep snapshots small.
func settingsOf(sc *model.Schedule) map[string]string {
	b, err := json.Marshal(sc)
	if err != nil {
		panic(err) // the loader only accepts JSON-compatible values
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		panic(err)
	}
	out := map[string]string{}
	flatten(out, "", top)
	return out
}

func flatten(out map[string]string, prefix string, m map[string]json.RawMessage) {
	for k, raw := range m {
		name := prefix + k
		var sub map[string]json.RawMessage
		if !secretSettings[name] && json.Unmarshal(raw, &sub) == nil {
			flatten(out, name+".", sub)
			continue
		}
		v := string(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			v = s
		}
		switch {
		case v == "" || v == "0" || v == "false" || v == "null" || v == "[]":
			continue
		case secretSettings[name] || len(v) > maxSettingLen:
			sum := sha256.Sum256(raw)
			v = hashedPrefix + hex.EncodeToString(sum[:6])
		}
		out[name] = v
	}
}

// changedSettings lists the settings that differ, by name. With no
// previous settings (a ledger written before astra recorded them) it
// says nothing rather than that everything changed.
func changedSettings(old, new map[string]string) []FieldChange {
	if old == nil {
		return nil
	}
	var out []FieldChange
	seen := map[string]bool{}
	add := func(k string) {
		if seen[k] || old[k] == new[k] {
			return
		}
		seen[k] = true
		c := FieldChange{Field: k}
		if !isHashed(old[k]) && !isHashed(new[k]) {
			c.Old, c.New = old[k], new[k]
		}
		out = append(out, c)
	}
	for k := range old {
		add(k)
	}
	for k := range new {
		add(k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func isHashed(v string) bool { return strings.HasPrefix(v, hashedPrefix) }
