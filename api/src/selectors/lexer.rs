//! Tokenizer of the label selector string syntax (upstream's `labels.Lexer`).

/// A lexical token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// An unexpected symbol sequence; the literal is the error text.
    Error,
    /// End of input.
    End,
    /// `)`
    ClosedPar,
    /// `,`
    Comma,
    /// `!`
    DoesNotExist,
    /// `==`
    DoubleEquals,
    /// `=`
    Equals,
    /// `>`
    GreaterThan,
    /// A key or a value.
    Identifier,
    /// `in`
    In,
    /// `<`
    LessThan,
    /// `!=`
    NotEquals,
    /// `notin`
    NotIn,
    /// `(`
    OpenPar,
}

fn symbol_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits `input` into tokens with their literals, ending with [`Token::End`].
pub fn scan(input: &str) -> Vec<(Token, String)> {
    let chars: Vec<char> = input.chars().collect();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < chars.len() && is_whitespace(chars[pos]) {
            pos += 1;
        }
        // A NUL ends the input, as it does for upstream's byte reader.
        if pos >= chars.len() || chars[pos] == '\0' {
            out.push((Token::End, String::new()));
            return out;
        }
        let (tok, lit) = if is_special(chars[pos]) {
            scan_symbol(&chars, &mut pos)
        } else {
            scan_identifier(&chars, &mut pos)
        };
        out.push((tok, lit));
    }
}

fn scan_identifier(chars: &[char], pos: &mut usize) -> (Token, String) {
    let start = *pos;
    while *pos < chars.len()
        && !is_whitespace(chars[*pos])
        && !is_special(chars[*pos])
        && chars[*pos] != '\0'
    {
        *pos += 1;
    }
    let lit: String = chars[start..*pos].iter().collect();
    let tok = match lit.as_str() {
        "in" => Token::In,
        "notin" => Token::NotIn,
        _ => Token::Identifier,
    };
    (tok, lit)
}

/// Longest run of special characters that forms a known symbol.
fn scan_symbol(chars: &[char], pos: &mut usize) -> (Token, String) {
    let mut buffer = String::new();
    let mut last: Option<(Token, String)> = None;
    while *pos < chars.len() && is_special(chars[*pos]) {
        buffer.push(chars[*pos]);
        if let Some(tok) = symbol_token(&buffer) {
            last = Some((tok, buffer.clone()));
            *pos += 1;
        } else if last.is_some() {
            break;
        } else {
            *pos += 1;
        }
    }
    last.unwrap_or_else(|| {
        (
            Token::Error,
            format!("error expected: keyword found '{buffer}'"),
        )
    })
}
