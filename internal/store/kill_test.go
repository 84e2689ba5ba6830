package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// killChildEnv carries the database of TestKillMidBatch's child process:
// "dir:<data dir>" or "url:<postgres url>".
const killChildEnv = "KEYWARD_TEST_KILL_CHILD"

var killT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// killUnit inserts key name and an audit entry naming it: a unit of two
// rows, so a half-kept unit shows.
func killUnit(ctx context.Context, tx license.Tx, name string) error {
	k := license.Key{AppID: "kill", LicenseKey: name, Status: license.StatusUnused, Type: license.TypeDays, Duration: 30,
		MaxDevices: 1, CreatedAt: killT0, UpdatedAt: killT0}
	if err := tx.InsertKeys(ctx, []license.Key{k}); err != nil {
		return err
	}
	return tx.AddAudit(ctx, audit.Entry{At: killT0, Actor: audit.System, Action: "key.generate", AppID: "kill", Target: name})
}

// TestKillMidBatch: a keyward killed with SIGKILL while a batch of write
// transactions is open loses nothing it acknowledged, keeps no part of a
// transaction, and keeps nothing of the open batch (on SQLite, where the
// batch is one transaction; on PostgreSQL every unit is a transaction of
// its own, and those acknowledged before the kill must be there).
//
// The child process commits units A0…A9 one at a time, printing each
// acknowledgement, then queues B0…B4 as one batch (GatherWrites); B4
// writes its rows, says "blocked" and never returns. The parent kills the
// child at that moment, reopens the database and checks it.
func TestKillMidBatch(t *testing.T) {
	if where := os.Getenv(killChildEnv); where != "" {
		killChild(where)
		return
	}
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := e.migrated(t)
			o.Keys = kwtest.SecretKeys
			db := openMigrated(t, o)
			app := &license.App{ID: "kill", Name: "Kill", Version: "1.0.0", Secret: "secret-kill",
				Settings: license.DefaultSettings(), CreatedAt: killT0, UpdatedAt: killT0}
			if err := db.LicenseStore().InTx(ctx, func(tx license.Tx) error { return tx.InsertApp(ctx, app, "hash-kill") }); err != nil {
				t.Fatal(err)
			}
			db.Close()

			where := "dir:" + o.DataDir
			if o.URL != "" {
				where = "url:" + o.URL
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidBatch$", "-test.count=1")
			cmd.Env = append(os.Environ(), killChildEnv+"="+where)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			acked := map[string]bool{}
			lines := bufio.NewScanner(out)
			blocked := false
			for lines.Scan() {
				line := lines.Text()
				if name, ok := strings.CutPrefix(line, "acked "); ok {
					acked[name] = true
				}
				if line == "blocked" {
					blocked = true
					break
				}
			}
			cmd.Process.Kill() // SIGKILL: no deferred Close, no flush
			for lines.Scan() {
				if name, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
					acked[name] = true
				}
			}
			cmd.Wait()
			if !blocked {
				t.Fatalf("the child ended before its batch blocked (acknowledged %d units)", len(acked))
			}

			db = open(t, o)
			ls := db.LicenseStore()
			for i := range 10 {
				if name := fmt.Sprintf("A%d", i); !acked[name] {
					t.Fatalf("the child did not acknowledge %s before the batch", name)
				}
			}
			for _, name := range []string{"A0", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "B0", "B1", "B2", "B3", "B4"} {
				_, kerr := ls.Key(ctx, "kill", name)
				if kerr != nil && !errors.Is(kerr, apperr.ErrNotFound) {
					t.Fatal(kerr)
				}
				entries, err := db.Audit(ctx, store.AuditFilter{AppID: "kill", Target: name})
				if err != nil {
					t.Fatal(err)
				}
				present := kerr == nil
				switch {
				case acked[name] && !present:
					t.Errorf("%s was acknowledged before the kill and is lost", name)
				case present != (len(entries) == 1):
					t.Errorf("%s: key present %v with %d audit entries: half a transaction was kept", name, present, len(entries))
				case name == "B4" && present:
					t.Errorf("B4 never returned, yet its rows were committed")
				case db.Engine() == store.SQLite && strings.HasPrefix(name, "B") && (present || acked[name]):
					t.Errorf("%s of the open batch: present %v, acknowledged %v; SQLite's batch is one transaction, want neither", name, present, acked[name])
				}
			}
		})
	}
}

// killChild is the child of TestKillMidBatch.
func killChild(where string) {
	ctx := context.Background()
	o := store.Options{Keys: kwtest.SecretKeys}
	if dir, ok := strings.CutPrefix(where, "dir:"); ok {
		o.DataDir = dir
	} else {
		o.URL = strings.TrimPrefix(where, "url:")
	}
	db, err := store.Open(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kill child:", err)
		os.Exit(2)
	}
	ls := db.LicenseStore()
	for i := range 10 {
		name := fmt.Sprintf("A%d", i)
		if err := ls.InTx(ctx, func(tx license.Tx) error { return killUnit(ctx, tx, name) }); err != nil {
			fmt.Fprintln(os.Stderr, "kill child:", name, err)
			os.Exit(2)
		}
		fmt.Println("acked", name)
	}
	db.GatherWrites(5)
	var mu sync.Mutex
	for i := range 5 {
		name := fmt.Sprintf("B%d", i)
		go func() {
			err := ls.InTx(ctx, func(tx license.Tx) error {
				if err := killUnit(ctx, tx, name); err != nil {
					return err
				}
				if name == "B4" {
					mu.Lock()
					fmt.Println("blocked")
					mu.Unlock()
					time.Sleep(time.Hour) // until SIGKILL (a timer, so not a deadlock to the runtime)
				}
				return nil
			})
			if err == nil {
				mu.Lock()
				fmt.Println("acked", name)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Hour) // until SIGKILL
}
