package dashboard

import "net/http"

// routesAudit: the audit log and resellers.
func (d *Dashboard) routesAudit(m *http.ServeMux) {}
