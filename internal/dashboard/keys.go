package dashboard

import "net/http"

// routesKeys: keys: search and filter, bulk generation and download, the per-key page, key actions and bulk actions.
func (d *Dashboard) routesKeys(m *http.ServeMux) {}
