package dashboard

import "net/http"

// routesUpdates: releases, artifact uploads, rollouts and the explain tool.
func (d *Dashboard) routesUpdates(m *http.ServeMux) {}
