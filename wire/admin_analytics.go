package wire

// Point is one step of an analytics series: the step's start and its count.
type Point struct {
	At string `json:"at"`
	N  int64  `json:"n"`
}

// VersionDevices is how many devices last reported running a version.
type VersionDevices struct {
	Version string `json:"version"`
	Devices int64  `json:"devices"`
}

// Analytics is an app's activity report (GET analytics.php). Step is
// "hour" or "day"; the maps count by error code or key status.
type Analytics struct {
	AppID             string           `json:"app_id"`
	From              string           `json:"from"`
	To                string           `json:"to"`
	Step              string           `json:"step"`
	ActiveNow         int64            `json:"active_now"`
	ActiveSessions    []Point          `json:"active_sessions"`
	Logins            []Point          `json:"logins"`
	Activations       []Point          `json:"activations"`
	Trials            []Point          `json:"trials"`
	Logouts           []Point          `json:"logouts"`
	LoginFailures     map[string]int64 `json:"login_failures"`
	HeartbeatRefusals map[string]int64 `json:"heartbeat_refusals"`
	KeysByStatus      map[string]int64 `json:"keys_by_status"`
	Versions          []VersionDevices `json:"versions"`
}

// AnalyticsReply is the reply of GET analytics.php.
type AnalyticsReply struct {
	Success   bool      `json:"success"`
	Analytics Analytics `json:"analytics"`
}
