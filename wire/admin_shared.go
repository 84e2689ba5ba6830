package wire

// The admin API's pricing, orders, subscriptions, slides and changelog
// replies (/api/admin/pricing.php, orders.php, subscriptions.php,
// slides.php, changelog.php). Their records are the client routes' [Plan],
// [Order], [PublicSubscription], [Slide] and [ChangelogEntry] with the
// admin's fields added.

// AdminPlan is a plan or level as the admin API shows it: the public
// [Plan] plus whether it is on sale and its place in the list.
type AdminPlan struct {
	Plan
	Active bool `json:"active"`
	Order  int  `json:"order"`
}

// PlanListReply is the reply of GET pricing.php: levels and plans, [] when
// there are none.
type PlanListReply struct {
	Success bool        `json:"success"`
	Levels  []AdminPlan `json:"levels"`
	Plans   []AdminPlan `json:"plans"`
}

// PlanReply is one plan after a change (POST, PUT pricing.php).
type PlanReply struct {
	Success bool      `json:"success"`
	Plan    AdminPlan `json:"plan"`
}

// OrderListReply is the reply of GET orders.php.
type OrderListReply struct {
	Success bool    `json:"success"`
	Orders  []Order `json:"orders"`
}

// AdminOrderReply is one order after an action (POST orders.php
// action=approve or refund).
type AdminOrderReply struct {
	Success bool  `json:"success"`
	Order   Order `json:"order"`
}

// FulfillmentSecretReply is the reply of POST orders.php
// action=fulfillment-secret: the new secret, shown once.
type FulfillmentSecretReply struct {
	Success           bool   `json:"success"`
	FulfillmentSecret string `json:"fulfillment_secret"`
}

// Subscription is a subscription as the admin API shows it: the public
// check's fields plus the key and the buyer's e-mail.
type Subscription struct {
	PublicSubscription
	LicenseKey string `json:"license_key"`
	Email      string `json:"email"`
}

// SubscriptionListReply is the reply of GET subscriptions.php, newest
// first.
type SubscriptionListReply struct {
	Success       bool           `json:"success"`
	Subscriptions []Subscription `json:"subscriptions"`
}

// SubscriptionReply is one subscription after a change (POST
// subscriptions.php action=cancel).
type SubscriptionReply struct {
	Success      bool         `json:"success"`
	Subscription Subscription `json:"subscription"`
}

// AdminSlide is a slide as the admin API shows it (slides.php): the client's
// [Slide] plus whether it is on and when it was made and last changed.
type AdminSlide struct {
	Slide
	Active    bool   `json:"active"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// SlideListReply is the reply of GET slides.php.
type SlideListReply struct {
	Success bool         `json:"success"`
	Slides  []AdminSlide `json:"slides"`
}

// SlideReply is one slide after a change (POST, PUT slides.php).
type SlideReply struct {
	Success bool       `json:"success"`
	Slide   AdminSlide `json:"slide"`
}

// AdminChangelogEntry is a changelog entry as the admin API shows it
// (changelog.php): the client's [ChangelogEntry] (PublishedAt null for a
// draft) plus whether it is published and when it was made and changed.
type AdminChangelogEntry struct {
	ChangelogEntry
	Published bool   `json:"published"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// ChangelogEntryListReply is the reply of GET changelog.php (admin).
type ChangelogEntryListReply struct {
	Success bool                  `json:"success"`
	Entries []AdminChangelogEntry `json:"entries"`
}

// ChangelogEntryReply is one entry after a change (POST, PUT changelog.php).
type ChangelogEntryReply struct {
	Success bool                `json:"success"`
	Entry   AdminChangelogEntry `json:"entry"`
}
