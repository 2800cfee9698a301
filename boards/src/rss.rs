//! Resident memory of this process, from `/proc/self/status` (Linux).

/// Memory figures of this process, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rss {
    /// Peak resident set (`VmHWM`).
    pub peak: u64,
    /// Resident set now (`VmRSS`).
    pub now: u64,
    /// Resident anonymous memory now (`RssAnon`): heap, stacks.
    pub anon: u64,
    /// Resident file-backed memory now (`RssFile`): the mapped model, the binary.
    pub file: u64,
}

/// Reads [`Rss`], or `None` where `/proc/self/status` does not exist or lacks the fields.
pub fn read() -> Option<Rss> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse(&text)
}

/// Parses the `kB` fields of a `/proc/<pid>/status` text.
pub fn parse(text: &str) -> Option<Rss> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        kb.checked_mul(1024)
    };
    Some(Rss {
        peak: field("VmHWM:")?,
        now: field("VmRSS:")?,
        anon: field("RssAnon:")?,
        file: field("RssFile:")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kb_fields() {
        let t = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 512 kB\nRssFile:\t 256 kB\n";
        let r = parse(t).unwrap();
        assert_eq!(
            (r.peak, r.now, r.anon, r.file),
            (2 << 20, 1 << 20, 512 << 10, 256 << 10)
        );
        assert_eq!(parse("VmHWM: 1 kB\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_resident_memory() {
        let r = read().unwrap();
        assert!(r.peak >= r.now && r.now > 0);
    }
}
