package server_test

import (
	"database/sql"
	"os"
	"strconv"
	"strings"
	"time"
)

// backendCPU is the CPU time used so far by each PostgreSQL backend of the
// database raw is connected to, by pid (from /proc/<pid>/stat; the server
// must run on this machine).
func backendCPU(raw *sql.DB) map[int]time.Duration {
	rows, err := raw.Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return nil
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: utime and stime are
		// the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(u+s) * 10 * time.Millisecond
	}
	return out
}
