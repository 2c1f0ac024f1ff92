-- A rack's numbering starts at 0..900, so that every unit number of every rack lies in
-- 0..999 (at most 100 units: racks_unit_count_positive). The gate bounds every unit a request
-- names by the same number (kMaxRackUnit in services/common/validation.h), so a request can name
-- any unit of any rack, and nothing larger ever reaches the arithmetic.
ALTER TABLE racks ADD CONSTRAINT racks_first_unit_bounded CHECK (first_unit <= 900);
