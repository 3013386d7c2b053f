//! A small XML writer: elements, attributes and escaped text, indented two spaces, in
//! the order written (so the output is deterministic).

/// An XML document being written.
#[derive(Debug, Default)]
pub(crate) struct Xml {
    buf: String,
    open: Vec<String>,
}

/// Escape text or an attribute value.
pub(crate) fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all are replaced, not dropped silently.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

impl Xml {
    /// A document with the XML declaration.
    pub(crate) fn new() -> Self {
        Xml {
            buf: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n".to_string(),
            open: Vec::new(),
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.open.len() {
            self.buf.push_str("  ");
        }
    }

    fn start_tag(&mut self, tag: &str, attrs: &[(&str, &str)]) {
        self.indent();
        self.buf.push('<');
        self.buf.push_str(tag);
        for (k, v) in attrs {
            self.buf.push(' ');
            self.buf.push_str(k);
            self.buf.push_str("=\"");
            self.buf.push_str(&escape(v));
            self.buf.push('"');
        }
    }

    /// Open `<tag attrs>`; close it with [`Xml::close`].
    pub(crate) fn open(&mut self, tag: &str, attrs: &[(&str, &str)]) -> &mut Self {
        self.start_tag(tag, attrs);
        self.buf.push_str(">\n");
        self.open.push(tag.to_string());
        self
    }

    /// Close the innermost open element.
    pub(crate) fn close(&mut self) -> &mut Self {
        if let Some(tag) = self.open.pop() {
            self.indent();
            self.buf.push_str("</");
            self.buf.push_str(&tag);
            self.buf.push_str(">\n");
        }
        self
    }

    /// `<tag attrs>text</tag>`.
    pub(crate) fn text(&mut self, tag: &str, attrs: &[(&str, &str)], text: &str) -> &mut Self {
        self.start_tag(tag, attrs);
        self.buf.push('>');
        self.buf.push_str(&escape(text));
        self.buf.push_str("</");
        self.buf.push_str(tag);
        self.buf.push_str(">\n");
        self
    }

    /// `<tag attrs/>`.
    pub(crate) fn empty(&mut self, tag: &str, attrs: &[(&str, &str)]) -> &mut Self {
        self.start_tag(tag, attrs);
        self.buf.push_str("/>\n");
        self
    }

    /// `<outer><inner>text</inner></outer>`, the ISO property pattern.
    pub(crate) fn prop(&mut self, outer: &str, inner: &str, text: &str) -> &mut Self {
        self.open(outer, &[]);
        self.text(inner, &[], text);
        self.close()
    }

    /// `<tag><gco:CharacterString>text</gco:CharacterString></tag>`.
    pub(crate) fn string(&mut self, tag: &str, text: &str) -> &mut Self {
        self.prop(tag, "gco:CharacterString", text)
    }

    /// A code list value: `<tag codeList="{codelists}{list}" codeListValue="value">value</tag>`.
    pub(crate) fn code(
        &mut self,
        codelists: &str,
        tag: &str,
        list: &str,
        value: &str,
    ) -> &mut Self {
        self.text(
            tag,
            &[
                ("codeList", &format!("{codelists}{list}")),
                ("codeListValue", value),
            ],
            value,
        )
    }

    /// The document (every element closed).
    pub(crate) fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.buf
    }
}
