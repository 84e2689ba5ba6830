package wire

// Release is a version of an app as the admin API shows it. Status is
// draft, published, halted or yanked; Rollout is in basis points (0–10000)
// and RolloutPercent the same as a fraction of 100 (0–100).
type Release struct {
	ID             int64      `json:"id"`
	Version        string     `json:"version"`
	Channel        string     `json:"channel"`
	Changelog      string     `json:"changelog"`
	IsMandatory    bool       `json:"is_mandatory"`
	MinVersion     string     `json:"min_version"`
	Rollout        int        `json:"rollout"`
	RolloutPercent float64    `json:"rollout_percent"`
	Status         string     `json:"status"`
	Published      bool       `json:"published"`
	Halted         bool       `json:"halted"`
	Yanked         bool       `json:"yanked"`
	Artifacts      []Artifact `json:"artifacts"`
	PublishedAt    *string    `json:"published_at"`
	CreatedAt      string     `json:"created_at"`
	UpdatedAt      string     `json:"updated_at"`
}

// Artifact is one downloadable file of a release.
type Artifact struct {
	ID          int64  `json:"id"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	FileName    string `json:"file_name"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	DownloadURL string `json:"download_url"`
	CreatedAt   string `json:"created_at"`
}

// StoredArtifact is the artifact an upload stored.
type StoredArtifact struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	FileName string `json:"file_name"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

// ReleaseListReply is the reply of GET updates.php: the releases and the
// minimum supported version per channel.
type ReleaseListReply struct {
	Success      bool              `json:"success"`
	Releases     []Release         `json:"releases"`
	MinSupported map[string]string `json:"min_supported"`
}

// ReleaseReply is one release, read (no Message) or changed.
type ReleaseReply struct {
	Success bool    `json:"success"`
	Message string  `json:"message,omitempty"`
	Release Release `json:"release"`
}

// MinSupportedReply is the reply of POST updates.php action=min_supported.
type MinSupportedReply struct {
	Success      bool              `json:"success"`
	Message      string            `json:"message"`
	MinSupported map[string]string `json:"min_supported"`
}

// ArtifactReply is the reply of an artifact upload: the file stored and the
// release it belongs to.
type ArtifactReply struct {
	Success  bool           `json:"success"`
	Message  string         `json:"message"`
	Artifact StoredArtifact `json:"artifact"`
	Release  Release        `json:"release"`
}

// UpdateReason is why one release was or was not offered (GET
// updates.php?action=explain): Outcome is "offered" or the gate that
// stopped it.
type UpdateReason struct {
	Version string `json:"version"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
}

// UpdateExplainReply is the reply of GET updates.php?action=explain: what a
// device sending the given check would be offered (Update, absent when
// nothing) and why, release by release.
type UpdateExplainReply struct {
	Success         bool              `json:"success"`
	UpdateAvailable bool              `json:"update_available"`
	Update          *UpdateDescriptor `json:"update,omitempty"`
	Reasons         []UpdateReason    `json:"reasons"`
}

// UpdateVersionStat is, for one version, how many devices were last
// offered it and how many run it.
type UpdateVersionStat struct {
	Version string `json:"version"`
	Offered int64  `json:"offered"`
	Running int64  `json:"running"`
}

// UpdateStatsReply is the reply of GET updates.php?action=stats: distinct
// devices that checked since Since, and per version what they were offered
// and run.
type UpdateStatsReply struct {
	Success  bool                `json:"success"`
	Since    *string             `json:"since"`
	Devices  int64               `json:"devices"`
	Versions []UpdateVersionStat `json:"versions"`
}
