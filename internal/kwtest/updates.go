package kwtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// CreateRelease creates a draft release through the admin API and returns
// its id. fields may add channel, changelog, rollout, min_version, ….
func (a *App) CreateRelease(version string, fields map[string]any) int64 {
	a.S.T.Helper()
	body := map[string]any{"app_id": a.ID, "version": version}
	for k, v := range fields {
		body[k] = v
	}
	r := a.S.MustAdmin("POST", "/api/admin/updates.php", body)
	return int64(r.Obj("release")["id"].(float64))
}

// Upload streams an artifact of release id through the admin API (os, arch
// and sha256 may be empty) and returns the raw reply.
func (a *App) Upload(id int64, os, arch string, body io.Reader, sha256 string) *Reply {
	a.S.T.Helper()
	q := url.Values{"action": {"upload"}, "app_id": {a.ID}, "id": {fmt.Sprint(id)}}
	for k, v := range map[string]string{"os": os, "arch": arch, "sha256": sha256} {
		if v != "" {
			q.Set(k, v)
		}
	}
	req, err := http.NewRequest("PUT", a.S.URL+"/api/admin/updates.php?"+q.Encode(), body)
	if err != nil {
		a.S.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.S.AdminToken())
	req.Header.Set("Content-Type", "application/octet-stream")
	return a.S.Send(req)
}

// Release creates, uploads (one universal artifact) and publishes a release
// with fields, returning its id.
func (a *App) Release(version string, artifact []byte, fields map[string]any) int64 {
	a.S.T.Helper()
	id := a.CreateRelease(version, fields)
	if r := a.Upload(id, "", "", bytes.NewReader(artifact), ""); r.Status != 200 {
		a.S.T.Fatalf("upload %s: %s", version, r)
	}
	a.S.MustAdmin("POST", "/api/admin/updates.php", map[string]any{"app_id": a.ID, "action": "publish", "id": id})
	return id
}
