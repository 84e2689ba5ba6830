package wire

import "encoding/json"

// Webhook is a webhook destination. AppID is null for a destination of
// every app (operators'). Secret, the signing secret, is sent only on
// creation, on rotation and when one destination is read by an admin who
// may see it; it is absent otherwise.
type Webhook struct {
	ID          int64    `json:"id"`
	AppID       *string  `json:"app_id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	Paused      bool     `json:"paused"`
	PausedAt    *string  `json:"paused_at"`
	Failures    int      `json:"failures"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	Secret      string   `json:"secret,omitempty"`
}

// WebhookListReply is the reply of GET webhooks.php.
type WebhookListReply struct {
	Success  bool      `json:"success"`
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookReply is one destination: read, created, edited or acted on
// (Message is absent on a read and on enable, disable and rotate_secret).
type WebhookReply struct {
	Success bool    `json:"success"`
	Message string  `json:"message,omitempty"`
	Webhook Webhook `json:"webhook"`
}

// Delivery is one event sent (or to send) to one destination.
// NextAttemptAt is present only while the delivery is pending; Body, the
// event as sent, only when one delivery is read.
type Delivery struct {
	ID            string          `json:"id"`
	WebhookID     int64           `json:"webhook_id"`
	Event         string          `json:"event"`
	AppID         *string         `json:"app_id"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	CreatedAt     string          `json:"created_at"`
	UpdatedAt     string          `json:"updated_at"`
	NextAttemptAt *string         `json:"next_attempt_at,omitempty"`
	Body          json.RawMessage `json:"body,omitempty"`
}

// DeliveryAttempt is one try of a delivery: the answer's status and first
// bytes, or the error.
type DeliveryAttempt struct {
	Attempt    int    `json:"attempt"`
	At         string `json:"at"`
	StatusCode int    `json:"status_code"`
	DurationMS int64  `json:"duration_ms"`
	Response   string `json:"response"`
	Error      string `json:"error"`
}

// DeliveryListReply is the reply of GET webhooks.php?action=deliveries.
type DeliveryListReply struct {
	Success    bool       `json:"success"`
	Deliveries []Delivery `json:"deliveries"`
}

// DeliveryReply is the reply of GET webhooks.php?action=delivery: the
// delivery with its body and attempts.
type DeliveryReply struct {
	Success  bool              `json:"success"`
	Delivery Delivery          `json:"delivery"`
	Attempts []DeliveryAttempt `json:"attempts"`
}

// DeliveryQueuedReply is the reply of POST webhooks.php action=redeliver.
type DeliveryQueuedReply struct {
	Success  bool     `json:"success"`
	Message  string   `json:"message"`
	Delivery Delivery `json:"delivery"`
}

// TestQueuedReply is the reply of POST webhooks.php action=test: the id of
// the test event's delivery.
type TestQueuedReply struct {
	Success    bool   `json:"success"`
	Message    string `json:"message"`
	DeliveryID string `json:"delivery_id"`
}
