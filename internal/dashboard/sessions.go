package dashboard

import "net/http"

// routesSessions: live sessions, HWID reset requests, app user accounts and trials.
func (d *Dashboard) routesSessions(m *http.ServeMux) {}
