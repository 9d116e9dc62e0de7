package launch

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNumbers holds the launcher's numbers to the kernel's names for them.
func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"PR_CAPBSET_DROP", prCapbsetDrop, unix.PR_CAPBSET_DROP},
		{"PR_SET_CHILD_SUBREAPER", prSetChildSubreaper, unix.PR_SET_CHILD_SUBREAPER},
		{"PR_SET_NO_NEW_PRIVS", prSetNoNewPrivs, unix.PR_SET_NO_NEW_PRIVS},
		{"SYS_LANDLOCK_RESTRICT_SELF", sysLandlockRestrictSelf, unix.SYS_LANDLOCK_RESTRICT_SELF},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d here, %d in the kernel", c.name, c.got, c.want)
		}
	}
	want := []uintptr{unix.CAP_SYS_RAWIO, unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE, unix.CAP_DAC_READ_SEARCH,
		unix.CAP_MKNOD, unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_BOOT, unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE}
	if len(capabilities) != len(want) {
		t.Fatalf("%d capabilities, want %d", len(capabilities), len(want))
	}
	for i, c := range capabilities {
		if c != want[i] {
			t.Errorf("capability %d is %d, want %d", i, c, want[i])
		}
	}
}
