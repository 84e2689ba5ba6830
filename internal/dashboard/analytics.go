package dashboard

import "net/http"

// routesAnalytics: charts of sessions, activations, trials, failures and versions.
func (d *Dashboard) routesAnalytics(m *http.ServeMux) {}
